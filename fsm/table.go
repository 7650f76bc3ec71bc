package fsm

import (
	"errors"
	"fmt"
)

// Transition is one row of the table: in state From, cause Cause leads to state To; and, for a
// row into Backoff, Then is the state its timer leads to.
//
// Self-transitions (From == To) are real transitions: they are where the reflector spends its
// life (Watching → Watching on every event).
type Transition struct {
	From  State
	Cause Cause
	To    State
	// Then is set on every row whose To is Backoff, and on no other: the state the reflector
	// goes on in when the wait is over (Snapshot.Next while it waits). Backoff has one timer
	// row into each such state, and that row is the one its timer takes. A row not into
	// Backoff leaves Then at its zero value.
	Then State
}

// BeginsRelist reports whether the row begins a relist: it leaves Watching for a listing of the
// synced store, at once (into Relisting) or after a wait (into Backoff, Then: Relisting). Every
// relist begins on such a row; transitions passes each through its relist rules
// (docs/design.md, "How to add a rule about relists").
func (t Transition) BeginsRelist() bool {
	return t.From == Watching && (t.To == Relisting || t.To == Backoff && t.Then == Relisting)
}

// Table is the reflector's transition table, and with Transition.Then the whole of its
// control flow: which causes each state admits, where each leads, and where each wait resumes.
// transitions.Step classifies each event into a Cause and ignores it unless the row (state,
// cause) is here; the row gives the target, and for a wait, what follows it. The stateless
// machine, the diagrams and the property tests are built from the same rows.
//
// Listing and Relisting both list, and their rows differ only in CauseStart, which only the
// first fill takes, and in where a failed LIST resumes after its wait (each retries itself).
// Listing is the first fill of an empty store, at resourceVersion 0 (docs/semantics.md,
// "Initial LIST"): nothing has synced yet. Relisting refills a synced store after the watch
// could not be resumed, at the last observed resourceVersion (docs/semantics.md, "Relist after a
// watch failure"), and the store keeps serving the old state until the Replace.
var Table = []Transition{
	// Listing: the first fill, at RV 0.
	{From: Listing, Cause: CauseStart, To: Listing},
	{From: Listing, Cause: CauseListItem, To: Listing},
	{From: Listing, Cause: CauseListPageMore, To: Listing},
	{From: Listing, Cause: CauseListComplete, To: Watching},
	{From: Listing, Cause: CauseListExpired, To: Listing},
	{From: Listing, Cause: CauseContinueExpired, To: Listing},
	{From: Listing, Cause: CauseListFailed, To: Backoff, Then: Listing},
	{From: Listing, Cause: CauseListRejected, To: Backoff, Then: Listing},
	{From: Listing, Cause: CauseWatchListOpened, To: Listing},
	{From: Listing, Cause: CauseInitialEvent, To: Listing},
	{From: Listing, Cause: CauseInitialEventsEnd, To: Watching},
	{From: Listing, Cause: CauseWatchListUnsupported, To: Listing},
	{From: Listing, Cause: CauseInitialTransferCut, To: Backoff, Then: Listing},
	{From: Listing, Cause: CauseWholeListRefused, To: Listing},
	{From: Listing, Cause: CausePageTooLarge, To: Listing},
	{From: Listing, Cause: CauseStop, To: Stopped},

	{From: Watching, Cause: CauseWatchOpened, To: Watching},
	{From: Watching, Cause: CauseWatchEvent, To: Watching},
	{From: Watching, Cause: CauseServerBusy, To: Backoff, Then: Watching},
	{From: Watching, Cause: CauseInternalErrorInWindow, To: Backoff, Then: Watching},
	{From: Watching, Cause: CauseInternalErrorPastWindow, To: Relisting},
	{From: Watching, Cause: CauseConnectFailed, To: Backoff, Then: Watching},
	{From: Watching, Cause: CauseStreamEnded, To: Watching},
	{From: Watching, Cause: CauseStreamEndedQuickly, To: Backoff, Then: Watching},
	{From: Watching, Cause: CauseExpired, To: Relisting},
	{From: Watching, Cause: CauseExpiredAgain, To: Backoff, Then: Relisting},
	{From: Watching, Cause: CauseExpiredYoungCache, To: Watching},
	// A watch cache lagging etcd answers a re-watch "too large" until it catches up: the relist
	// at "" waits first, or every round would cost a consistent LIST at once.
	{From: Watching, Cause: CauseTooLargeRV, To: Backoff, Then: Relisting},
	{From: Watching, Cause: CauseWatchRejectedOnce, To: Backoff, Then: Watching},
	{From: Watching, Cause: CauseWatchRejected, To: Backoff, Then: Relisting},
	// A relist that a relist rule holds back, whichever row above it would have taken: it
	// waits, then lists (transitions' relistRow). No run takes it unless a rule is configured.
	{From: Watching, Cause: CauseRelistDeferred, To: Backoff, Then: Relisting},
	// The watch's deadline: a stream silent past its bound is replaced, one still delivering
	// gets its next deadline (docs/semantics.md, "silent watch").
	{From: Watching, Cause: CauseWatchSilent, To: Watching},
	{From: Watching, Cause: CauseSilenceCheck, To: Watching},
	{From: Watching, Cause: CauseStop, To: Stopped},

	// Backoff: one timer row for each state a wait can lead to; Snapshot.Next picks it.
	{From: Backoff, Cause: CauseRetryWatch, To: Watching},
	{From: Backoff, Cause: CauseRetryRelist, To: Relisting},
	{From: Backoff, Cause: CauseRetryList, To: Listing},
	{From: Backoff, Cause: CauseStop, To: Stopped},

	// Relisting: Listing's rows but CauseStart, at the last RV, resuming itself after a wait.
	{From: Relisting, Cause: CauseListItem, To: Relisting},
	{From: Relisting, Cause: CauseListPageMore, To: Relisting},
	{From: Relisting, Cause: CauseListComplete, To: Watching},
	{From: Relisting, Cause: CauseListExpired, To: Relisting},
	{From: Relisting, Cause: CauseContinueExpired, To: Relisting},
	{From: Relisting, Cause: CauseListFailed, To: Backoff, Then: Relisting},
	{From: Relisting, Cause: CauseListRejected, To: Backoff, Then: Relisting},
	{From: Relisting, Cause: CauseWatchListOpened, To: Relisting},
	{From: Relisting, Cause: CauseInitialEvent, To: Relisting},
	{From: Relisting, Cause: CauseInitialEventsEnd, To: Watching},
	{From: Relisting, Cause: CauseWatchListUnsupported, To: Relisting},
	{From: Relisting, Cause: CauseInitialTransferCut, To: Backoff, Then: Relisting},
	{From: Relisting, Cause: CauseWholeListRefused, To: Relisting},
	{From: Relisting, Cause: CausePageTooLarge, To: Relisting},
	{From: Relisting, Cause: CauseStop, To: Stopped},
}

const numStates = int(Stopped) + 1

// index holds Table by (from, cause) so that the hot path finds a row in one load, and by the
// state each Backoff timer row leads to. A cause not permitted in a state has a zero entry
// (its Cause is NoCause). relists says which causes' rows begin a relist.
type index struct {
	rows    [numStates][numCauses]Transition
	resumes [numStates]Cause
	relists [numCauses]bool
}

var tableIndex = func() *index {
	x, err := indexTable(Table)
	if err != nil {
		panic(err)
	}
	return x
}()

// indexTable checks a table and indexes it. The checks are what lets Snapshot.Next be the only
// thing a wait remembers: every row into Backoff names a Then, and Backoff has exactly one
// timer row into each Then; and what lets a wait's cause say whether it begins a relist: a
// cause's rows begin a relist all or none.
func indexTable(table []Transition) (*index, error) {
	x := new(index)
	var errs []error
	for _, row := range table {
		if int(row.From) >= numStates || int(row.To) >= numStates || int(row.Then) >= numStates ||
			row.Cause == NoCause || row.Cause >= numCauses {
			errs = append(errs, fmt.Errorf("row %+v is out of range", row))
			continue
		}
		if x.rows[row.From][row.Cause].Cause != NoCause {
			errs = append(errs, fmt.Errorf("duplicate row %s --%s-->", row.From, row.Cause))
		}
		x.rows[row.From][row.Cause] = row
		x.relists[row.Cause] = x.relists[row.Cause] || row.BeginsRelist()
		if row.From != Backoff || row.To == Stopped {
			continue
		}
		if x.resumes[row.To] != NoCause {
			errs = append(errs, fmt.Errorf("Backoff has two timer rows into %s: %s and %s", row.To, x.resumes[row.To], row.Cause))
		}
		x.resumes[row.To] = row.Cause
	}
	for _, row := range table {
		if x.relists[row.Cause] && !row.BeginsRelist() {
			errs = append(errs, fmt.Errorf("row %s --%s--> %s does not begin a relist, but another row of %s does", row.From, row.Cause, row.To, row.Cause))
		}
		switch {
		case row.To != Backoff:
			if row.Then != 0 {
				errs = append(errs, fmt.Errorf("row %s --%s--> %s has a Then (%s) but does not lead to Backoff", row.From, row.Cause, row.To, row.Then))
			}
		case row.Then == Listing && row.From != Listing:
			// Listing, the first fill, is never entered again once left; so a row from
			// anywhere else with Then: Listing is one whose Then was forgotten (zero).
			errs = append(errs, fmt.Errorf("row %s --%s--> Backoff has no Then (or Then: Listing, which only Listing's own rows may have)", row.From, row.Cause))
		case row.Then == Backoff || row.Then == Stopped:
			errs = append(errs, fmt.Errorf("row %s --%s--> Backoff: a wait cannot lead to %s", row.From, row.Cause, row.Then))
		case x.resumes[row.Then] == NoCause:
			errs = append(errs, fmt.Errorf("row %s --%s--> Backoff leads on to %s, but Backoff has no timer row into it", row.From, row.Cause, row.Then))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fsm: bad transition table: %w", err)
	}
	return x, nil
}

// Lookup returns the row of the table for cause in state from, and whether there is one: a
// cause the table does not permit in a state is an event that state ignores.
func Lookup(from State, cause Cause) (Transition, bool) {
	if int(from) >= numStates || cause >= numCauses {
		return Transition{}, false
	}
	row := tableIndex.rows[from][cause]
	return row, row.Cause != NoCause
}

// Target returns where cause leads from state, and whether the table permits it at all.
func Target(from State, cause Cause) (State, bool) {
	row, ok := Lookup(from, cause)
	return row.To, ok
}

// Resume returns the cause of Backoff's timer row into next: the transition a wait that
// leads to next takes when its timer fires. ok is false when no wait leads to next.
func Resume(next State) (Cause, bool) {
	if int(next) >= numStates {
		return NoCause, false
	}
	c := tableIndex.resumes[next]
	return c, c != NoCause
}

// Permitted lists the causes the table permits in state, in table order.
func Permitted(state State) []Cause {
	var out []Cause
	for _, row := range Table {
		if row.From == state {
			out = append(out, row.Cause)
		}
	}
	return out
}

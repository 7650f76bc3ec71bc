package fsm

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
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

// Table is a checked transition table, and with Transition.Then the whole of the reflector's
// control flow: which causes each state admits, where each leads, and where each wait resumes;
// with each cause's facts beside its rows. transitions.Step reads each event as a Cause and
// ignores it unless the row (state, cause) is here; the row gives the target, and for a wait,
// what follows it. The stateless machine, the diagrams and the property tests are built from
// the same rows.
//
// The reflector's table is transitions.Table, derived from transitions' rules (one declaration
// per cause: how an event is read as it, its rows, its facts, its effect); fsm holds the type
// and its checks so that every reader of the table — fsmcheck, the diagrams, the stats — reads
// it the same way, and a table that breaks them is refused when it is built (NewTable).
//
// Listing and Relisting both list (ListingAndRelisting, which NewTable checks). Listing is the
// first fill of an empty store, at resourceVersion 0 (docs/semantics.md, "Initial LIST"):
// nothing has synced yet. Relisting refills a synced store after the watch could not be
// resumed, at the last observed resourceVersion (docs/semantics.md, "Relist after a watch
// failure"), and the store keeps serving the old state until the Replace.
type Table struct {
	rows []Transition
	// rowAt holds the rows by (from, cause) so that the hot path finds a row in one load; a
	// cause not permitted in a state has a zero entry (its Cause is NoCause).
	rowAt [numStates][numCauses]Transition
	// resumes holds the cause of Backoff's timer row into each state.
	resumes [numStates]Cause
	// relists says which causes' rows begin a relist.
	relists [numCauses]bool
	facts   [numCauses]CauseFacts
}

const numStates = int(Stopped) + 1

// ListingAndRelisting is what the table holds of its two listing states, and NewTable checks:
// the start's causes are those of CauseFacts.Start (the start itself, a persisted snapshot's
// probe), and a state's own name in a row is the same place as the other's. It is written
// here only: the diagrams' note and docs/design.md quote it, and a test holds them to it.
const ListingAndRelisting = "Listing and Relisting have the same rows but the start's, which only Listing takes, and each one's waits come back to itself."

// NewTable checks rows and the facts of their causes and builds the table. Its rows are kept in
// (From, Cause) order, whatever order they came in: the order the diagrams draw them in.
//
// The checks are what lets Snapshot.Next be the only thing a wait remembers: every row into
// Backoff names a Then, and Backoff has exactly one timer row into each Then; what lets a
// wait's cause say whether it begins a relist: a cause's rows begin a relist all or none; and
// that the facts say nothing the rows contradict: every cause is declared once and has rows, a
// cause that avoids a LIST leads back to the watch, one the server accepted does not wait, a
// watch failure answered by another try (avoiding a LIST or beginning a relist) is a retry, and
// a retry is no accepted request.
func NewTable(rows []Transition, facts []CauseFacts) (*Table, error) {
	t := &Table{rows: slices.Clone(rows)}
	slices.SortStableFunc(t.rows, func(a, b Transition) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.Cause, b.Cause))
	})
	var errs []error
	for _, row := range t.rows {
		if int(row.From) >= numStates || int(row.To) >= numStates || int(row.Then) >= numStates ||
			row.Cause == NoCause || row.Cause >= numCauses {
			errs = append(errs, fmt.Errorf("row %+v is out of range", row))
			continue
		}
		if t.rowAt[row.From][row.Cause].Cause != NoCause {
			errs = append(errs, fmt.Errorf("duplicate row %s --%s-->", row.From, row.Cause))
		}
		t.rowAt[row.From][row.Cause] = row
		t.relists[row.Cause] = t.relists[row.Cause] || row.BeginsRelist()
		if row.From != Backoff || row.To == Stopped {
			continue
		}
		if t.resumes[row.To] != NoCause {
			errs = append(errs, fmt.Errorf("Backoff has two timer rows into %s: %s and %s", row.To, t.resumes[row.To], row.Cause))
		}
		t.resumes[row.To] = row.Cause
	}
	for _, row := range t.rows {
		if row.Cause == NoCause || row.Cause >= numCauses {
			continue
		}
		if t.relists[row.Cause] && !row.BeginsRelist() {
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
		case t.resumes[row.Then] == NoCause:
			errs = append(errs, fmt.Errorf("row %s --%s--> Backoff leads on to %s, but Backoff has no timer row into it", row.From, row.Cause, row.Then))
		}
	}
	if facts != nil {
		errs = append(errs, t.checkFacts(facts)...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("fsm: bad transition table: %w", err)
	}
	return t, nil
}

// checkFacts files each cause's facts and checks them against its rows.
func (t *Table) checkFacts(facts []CauseFacts) []error {
	var errs []error
	declared := [numCauses]bool{}
	for _, f := range facts {
		c := f.Cause
		if c == NoCause || c >= numCauses {
			errs = append(errs, fmt.Errorf("facts of %s: no such cause", c))
			continue
		}
		if declared[c] {
			errs = append(errs, fmt.Errorf("cause %s is declared twice", c))
		}
		declared[c] = true
		t.facts[c] = f
		var rows int
		for _, row := range t.rows {
			if row.Cause != c {
				continue
			}
			rows++
			leadsTo := row.To
			if row.To == Backoff {
				leadsTo = row.Then
			}
			if f.AvoidsList != AvoidsNoList && leadsTo != Watching {
				errs = append(errs, fmt.Errorf("%s avoids a LIST, so it must lead back to the watch: row %s --%s--> %s", c, row.From, c, row.To))
			}
			if f.Accepted && row.To == Backoff {
				errs = append(errs, fmt.Errorf("%s says the server accepted a request but waits", c))
			}
		}
		if rows == 0 {
			errs = append(errs, fmt.Errorf("cause %s has no row", c))
		}
		if (f.AvoidsList != AvoidsNoList || t.relists[c]) && !f.Retry {
			errs = append(errs, fmt.Errorf("%s is a watch failure answered by another try, so a retry", c))
		}
		if f.Retry && f.Accepted {
			errs = append(errs, fmt.Errorf("%s: a retry answers a failure, not an accepted request", c))
		}
	}
	for c := NoCause + 1; c < numCauses; c++ {
		if !declared[c] {
			errs = append(errs, fmt.Errorf("cause %s is not declared", c))
		}
	}
	return append(errs, t.checkListings()...)
}

// checkListings holds the rows of Listing and Relisting to ListingAndRelisting.
func (t *Table) checkListings() []error {
	var errs []error
	// same reads a listing state's own name in its row as the other's: itself.
	const itself = State(0xff)
	same := func(s, self State) State {
		if s == self {
			return itself
		}
		return s
	}
	for c := NoCause + 1; c < numCauses; c++ {
		l, inListing := t.Lookup(Listing, c)
		r, inRelisting := t.Lookup(Relisting, c)
		switch {
		case t.facts[c].Start && inRelisting:
			errs = append(errs, fmt.Errorf("%s is the start's, yet Relisting takes it: %s", c, ListingAndRelisting))
		case t.facts[c].Start:
		case inListing != inRelisting:
			errs = append(errs, fmt.Errorf("%s is not the start's, yet only one of Listing and Relisting takes it: %s", c, ListingAndRelisting))
		case inListing && (same(l.To, Listing) != same(r.To, Relisting) || l.To == Backoff && same(l.Then, Listing) != same(r.Then, Relisting)):
			errs = append(errs, fmt.Errorf("%s leads Listing to %s and Relisting to %s: %s", c, l.To, r.To, ListingAndRelisting))
		}
	}
	return errs
}

// Rows returns the table's rows, in (From, Cause) order.
func (t *Table) Rows() []Transition { return slices.Clone(t.rows) }

// Lookup returns the row of the table for cause in state from, and whether there is one: a
// cause the table does not permit in a state is an event that state ignores.
func (t *Table) Lookup(from State, cause Cause) (Transition, bool) {
	if int(from) >= numStates || cause >= numCauses {
		return Transition{}, false
	}
	row := t.rowAt[from][cause]
	return row, row.Cause != NoCause
}

// Target returns where cause leads from state, and whether the table permits it at all.
func (t *Table) Target(from State, cause Cause) (State, bool) {
	row, ok := t.Lookup(from, cause)
	return row.To, ok
}

// Resume returns the cause of Backoff's timer row into next: the transition a wait that
// leads to next takes when its timer fires. ok is false when no wait leads to next.
func (t *Table) Resume(next State) (Cause, bool) {
	if int(next) >= numStates {
		return NoCause, false
	}
	c := t.resumes[next]
	return c, c != NoCause
}

// Permitted lists the causes the table permits in state, in table order.
func (t *Table) Permitted(state State) []Cause {
	var out []Cause
	for _, row := range t.rows {
		if row.From == state {
			out = append(out, row.Cause)
		}
	}
	return out
}

// Facts returns the facts declared for cause (the zero CauseFacts for a value that is no cause).
func (t *Table) Facts(c Cause) CauseFacts {
	if c < numCauses {
		return t.facts[c]
	}
	return CauseFacts{}
}

// Label is the cause's diagram label, or its ID where it has none.
func (t *Table) Label(c Cause) string {
	if c < numCauses && t.facts[c].Label != "" {
		return t.facts[c].Label
	}
	return c.String()
}

// BeginsRelist reports whether the cause's rows begin a relist (Transition.BeginsRelist): it
// ends a watch that cannot be resumed, so the synced store is listed again, at once or after a
// wait. The table holds a cause's rows to all begin a relist or none, so that a wait's cause
// (Snapshot.Cause in Backoff) says whether its timer begins one.
func (t *Table) BeginsRelist(c Cause) bool { return c < numCauses && t.relists[c] }

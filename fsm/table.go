package fsm

// Transition is one row of the table: in state From, cause Cause leads to state To.
// Self-transitions (From == To) are real transitions: they are where the reflector spends its
// life (Watching → Watching on every event).
type Transition struct {
	From  State
	Cause Cause
	To    State
}

// Table is the reflector's transition table: the single source of truth for which transitions
// exist. transitions.Step classifies each event into a Cause and takes its target from here;
// the stateless machine, the diagrams and the property tests are built from the same rows.
var Table = []Transition{
	{Listing, CauseStart, Listing},
	{Listing, CauseListPageMore, Listing},
	{Listing, CauseListComplete, Watching},
	{Listing, CauseListExpired, Listing},
	{Listing, CauseContinueExpired, Listing},
	{Listing, CauseListFailed, Backoff},
	{Listing, CauseListRejected, Backoff},
	{Listing, CauseWatchListOpened, Listing},
	{Listing, CauseInitialEvent, Listing},
	{Listing, CauseInitialEventsEnd, Watching},
	{Listing, CauseWatchListUnsupported, Listing},
	{Listing, CauseInitialTransferCut, Backoff},
	{Listing, CauseStop, Stopped},

	{Watching, CauseWatchOpened, Watching},
	{Watching, CauseWatchEvent, Watching},
	{Watching, CauseTooManyRequests, Backoff},
	{Watching, CauseInternalErrorInWindow, Backoff},
	{Watching, CauseInternalErrorPastWindow, Relisting},
	{Watching, CauseConnectFailed, Backoff},
	{Watching, CauseStreamEnded, Watching},
	{Watching, CauseStreamEndedQuickly, Backoff},
	{Watching, CauseExpired, Relisting},
	{Watching, CauseExpiredAgain, Backoff},
	{Watching, CauseTooLargeRV, Relisting},
	{Watching, CauseWatchRejected, Backoff},
	{Watching, CauseStop, Stopped},

	{Backoff, CauseRetryWatch, Watching},
	{Backoff, CauseRetryRelist, Relisting},
	{Backoff, CauseRetryList, Listing},
	{Backoff, CauseStop, Stopped},

	{Relisting, CauseListPageMore, Relisting},
	{Relisting, CauseListComplete, Watching},
	{Relisting, CauseListExpired, Relisting},
	{Relisting, CauseContinueExpired, Relisting},
	{Relisting, CauseListFailed, Backoff},
	{Relisting, CauseListRejected, Backoff},
	{Relisting, CauseWatchListOpened, Relisting},
	{Relisting, CauseInitialEvent, Relisting},
	{Relisting, CauseInitialEventsEnd, Watching},
	{Relisting, CauseWatchListUnsupported, Relisting},
	{Relisting, CauseInitialTransferCut, Backoff},
	{Relisting, CauseStop, Stopped},
}

const numStates = int(Stopped) + 1

// targets indexes Table by (from, cause) so the hot path looks a transition up in one load.
// A zero entry means "not permitted"; entries hold To+1.
var targets = func() (t [numStates][numCauses]uint8) {
	for _, row := range Table {
		if t[row.From][row.Cause] != 0 {
			panic("fsm: duplicate transition " + row.From.String() + " --" + row.Cause.String() + "-->")
		}
		t[row.From][row.Cause] = uint8(row.To) + 1
	}
	return t
}()

// Target returns where cause leads from state, and whether the table permits it at all.
func Target(from State, cause Cause) (State, bool) {
	if int(from) >= numStates || cause >= numCauses {
		return 0, false
	}
	to := targets[from][cause]
	return State(to - 1), to != 0
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

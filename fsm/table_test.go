package fsm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/design.md "Layers": the table is the whole of the control flow. Every row into Backoff
// says where its wait leads, and Backoff has the one timer row that goes there.
func TestEveryWaitSaysWhereItLeads(t *testing.T) {
	for _, row := range Table {
		if row.To != Backoff {
			assert.Zero(t, row.Then, "%s --%s--> %s is no wait and has no Then", row.From, row.Cause, row.To)
			continue
		}
		require.NotContains(t, []State{Backoff, Stopped}, row.Then, "%s --%s--> Backoff", row.From, row.Cause)
		if row.Then == Listing {
			require.Equal(t, Listing, row.From, "only the first fill's own waits lead back to it: %s --%s-->", row.From, row.Cause)
		}
		timer, ok := Resume(row.Then)
		require.True(t, ok, "%s --%s--> Backoff leads on to %s, and Backoff has no timer row into it", row.From, row.Cause, row.Then)
		to, ok := Target(Backoff, timer)
		require.True(t, ok)
		assert.Equal(t, row.Then, to, "timer row %s", timer)
	}

	// And each timer row is some wait's Then: no row out of Backoff that nothing leads to.
	for _, row := range Table {
		if row.From != Backoff || row.Cause == CauseStop {
			continue
		}
		used := false
		for _, w := range Table {
			used = used || (w.To == Backoff && w.Then == row.To)
		}
		assert.True(t, used, "timer row %s into %s: no wait leads there", row.Cause, row.To)
	}
}

// What the table says about each wait's destination, spelled out (docs/semantics.md, failure
// rows): a failed LIST retries itself; a busy or broken watch re-watches; a rejected watch and
// a second 410 relist.
func TestWaitDestinations(t *testing.T) {
	cases := []struct {
		from  State
		cause Cause
		then  State
		timer Cause
	}{
		{Listing, CauseListFailed, Listing, CauseRetryList},
		{Listing, CauseListRejected, Listing, CauseRetryList},
		{Listing, CauseInitialTransferCut, Listing, CauseRetryList},
		{Relisting, CauseListFailed, Relisting, CauseRetryRelist},
		{Relisting, CauseListRejected, Relisting, CauseRetryRelist},
		{Relisting, CauseInitialTransferCut, Relisting, CauseRetryRelist},
		{Watching, CauseServerBusy, Watching, CauseRetryWatch},
		{Watching, CauseInternalErrorInWindow, Watching, CauseRetryWatch},
		{Watching, CauseConnectFailed, Watching, CauseRetryWatch},
		{Watching, CauseStreamEndedQuickly, Watching, CauseRetryWatch},
		{Watching, CauseExpiredAgain, Relisting, CauseRetryRelist},
		{Watching, CauseTooLargeRV, Relisting, CauseRetryRelist},
		{Watching, CauseWatchRejectedOnce, Watching, CauseRetryWatch},
		{Watching, CauseWatchRejected, Relisting, CauseRetryRelist},
		{Watching, CauseRelistDeferred, Relisting, CauseRetryRelist},
	}
	waits := 0
	for _, row := range Table {
		if row.To == Backoff {
			waits++
		}
	}
	require.Equal(t, waits, len(cases), "every row into Backoff is listed here")
	for _, c := range cases {
		row, ok := Lookup(c.from, c.cause)
		require.True(t, ok, "%s --%s-->", c.from, c.cause)
		assert.Equal(t, Transition{From: c.from, Cause: c.cause, To: Backoff, Then: c.then}, row)
		timer, _ := Resume(row.Then)
		assert.Equal(t, c.timer, timer, "%s --%s-->", c.from, c.cause)
	}
}

// Listing and Relisting differ in CauseStart alone: every other cause either admits leads to
// the same place, or back to the state it came from (itself, or after a wait).
func TestListingAndRelistingDifferOnlyInStart(t *testing.T) {
	for _, c := range Causes() {
		l, inListing := Lookup(Listing, c)
		r, inRelisting := Lookup(Relisting, c)
		if c == CauseStart {
			assert.True(t, inListing)
			assert.False(t, inRelisting, "a relist is never the start")
			continue
		}
		require.Equal(t, inListing, inRelisting, "cause %s", c)
		if !inListing {
			continue
		}
		same := func(s, self State) State {
			if s == self {
				return 0xff
			}
			return s
		}
		assert.Equal(t, same(l.To, Listing), same(r.To, Relisting), "cause %s", c)
		if l.To == Backoff {
			assert.Equal(t, same(l.Then, Listing), same(r.Then, Relisting), "cause %s", c)
		}
	}
}

func TestLookupOutsideTheTable(t *testing.T) {
	_, ok := Lookup(Stopped, CauseStop)
	assert.False(t, ok, "Stopped admits nothing")
	_, ok = Lookup(Watching, NoCause)
	assert.False(t, ok)
	_, ok = Lookup(Watching, CauseListComplete)
	assert.False(t, ok)
	_, ok = Lookup(State(9), CauseStop)
	assert.False(t, ok)
	_, ok = Lookup(Watching, Cause(250))
	assert.False(t, ok)
	_, ok = Resume(Stopped)
	assert.False(t, ok, "no wait leads to Stopped")
	_, ok = Resume(State(9))
	assert.False(t, ok)
	assert.Equal(t, []Cause{CauseRetryWatch, CauseRetryRelist, CauseRetryList, CauseStop}, Permitted(Backoff))
}

// The checks behind the two tests above also run on the compiled-in table when the package
// loads; here they meet the tables they exist to refuse.
func TestIndexTableRefusesBrokenTables(t *testing.T) {
	timers := []Transition{
		{From: Backoff, Cause: CauseRetryWatch, To: Watching},
		{From: Backoff, Cause: CauseRetryRelist, To: Relisting},
	}
	with := func(rows ...Transition) []Transition { return append(append([]Transition{}, timers...), rows...) }
	for _, c := range []struct {
		name  string
		table []Transition
		err   string
	}{
		{"forgotten Then", with(Transition{From: Watching, Cause: CauseServerBusy, To: Backoff}),
			"Watching --server-busy--> Backoff has no Then"},
		{"Then without a timer row", with(Transition{From: Listing, Cause: CauseListFailed, To: Backoff, Then: Listing}),
			"leads on to Listing, but Backoff has no timer row into it"},
		{"Then on a row that does not wait", with(Transition{From: Watching, Cause: CauseExpired, To: Relisting, Then: Watching}),
			"has a Then (Watching) but does not lead to Backoff"},
		{"a wait into Stopped", with(Transition{From: Watching, Cause: CauseWatchRejected, To: Backoff, Then: Stopped}),
			"a wait cannot lead to Stopped"},
		{"two timer rows into one state", with(Transition{From: Backoff, Cause: CauseRetryList, To: Watching}),
			"Backoff has two timer rows into Watching"},
		{"duplicate row", with(Transition{From: Watching, Cause: CauseStop, To: Stopped}, Transition{From: Watching, Cause: CauseStop, To: Stopped}),
			"duplicate row Watching --stop-->"},
		{"NoCause", with(Transition{From: Watching, Cause: NoCause, To: Watching}), "out of range"},
		{"a cause that begins a relist in one row only", with(Transition{From: Watching, Cause: CauseExpired, To: Relisting},
			Transition{From: Relisting, Cause: CauseExpired, To: Relisting}),
			"row Relisting --expired--> Relisting does not begin a relist, but another row of expired does"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := indexTable(c.table)
			assert.ErrorContains(t, err, c.err)
		})
	}
	_, err := indexTable(with(Transition{From: Watching, Cause: CauseServerBusy, To: Backoff, Then: Watching}))
	assert.NoError(t, err)
}

// Every relist begins on a row that leaves Watching for a listing, at once or after a wait; the
// table says which, and a cause begins a relist exactly when its rows do.
func TestRowsThatBeginARelist(t *testing.T) {
	var begin []Cause
	for _, row := range Table {
		if row.BeginsRelist() {
			begin = append(begin, row.Cause)
		}
		assert.Equal(t, row.BeginsRelist(), row.Cause.BeginsRelist(), "row %s --%s--> %s", row.From, row.Cause, row.To)
	}
	assert.Equal(t, []Cause{CauseInternalErrorPastWindow, CauseExpired, CauseExpiredAgain, CauseTooLargeRV,
		CauseWatchRejected, CauseRelistDeferred}, begin)
	assert.False(t, Transition{From: Relisting, Cause: CauseListFailed, To: Backoff, Then: Relisting}.BeginsRelist(),
		"a relist's own retry is no new relist")
	assert.False(t, Transition{From: Backoff, Cause: CauseRetryRelist, To: Relisting}.BeginsRelist(),
		"the timer of a wait goes on with what its row began")
	assert.False(t, NoCause.BeginsRelist())
	assert.False(t, Cause(250).BeginsRelist())
}

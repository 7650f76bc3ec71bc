package transitions

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

// docs/design.md "Layers": the table is the whole of the control flow. Every row into fsm.Backoff
// says where its wait leads, and fsm.Backoff has the one timer row that goes there.
func TestEveryWaitSaysWhereItLeads(t *testing.T) {
	for _, row := range Table.Rows() {
		if row.To != fsm.Backoff {
			assert.Zero(t, row.Then, "%s --%s--> %s is no wait and has no Then", row.From, row.Cause, row.To)
			continue
		}
		require.NotContains(t, []fsm.State{fsm.Backoff, fsm.Stopped}, row.Then, "%s --%s--> fsm.Backoff", row.From, row.Cause)
		if row.Then == fsm.Listing {
			require.Equal(t, fsm.Listing, row.From, "only the first fill's own waits lead back to it: %s --%s-->", row.From, row.Cause)
		}
		timer, ok := Table.Resume(row.Then)
		require.True(t, ok, "%s --%s--> fsm.Backoff leads on to %s, and fsm.Backoff has no timer row into it", row.From, row.Cause, row.Then)
		to, ok := Table.Target(fsm.Backoff, timer)
		require.True(t, ok)
		assert.Equal(t, row.Then, to, "timer row %s", timer)
	}

	// And each timer row is some wait's Then: no row out of fsm.Backoff that nothing leads to.
	for _, row := range Table.Rows() {
		if row.From != fsm.Backoff || row.Cause == fsm.CauseStop {
			continue
		}
		used := false
		for _, w := range Table.Rows() {
			used = used || (w.To == fsm.Backoff && w.Then == row.To)
		}
		assert.True(t, used, "timer row %s into %s: no wait leads there", row.Cause, row.To)
	}
}

// What the table says about each wait's destination, spelled out (docs/semantics.md, failure
// rows): a failed LIST retries itself; a busy or broken watch re-watches; a rejected watch, a
// second 410, and the one kube-apiserver unreachable relist.
func TestWaitDestinations(t *testing.T) {
	cases := []struct {
		from  fsm.State
		cause fsm.Cause
		then  fsm.State
		timer fsm.Cause
	}{
		{fsm.Listing, fsm.CauseListFailed, fsm.Listing, fsm.CauseRetryList},
		{fsm.Listing, fsm.CauseListRejected, fsm.Listing, fsm.CauseRetryList},
		{fsm.Listing, fsm.CauseInitialTransferCut, fsm.Listing, fsm.CauseRetryList},
		{fsm.Listing, fsm.CauseListStalled, fsm.Listing, fsm.CauseRetryList},
		{fsm.Relisting, fsm.CauseListStalled, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Relisting, fsm.CauseListFailed, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Relisting, fsm.CauseListRejected, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Relisting, fsm.CauseInitialTransferCut, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Watching, fsm.CauseServerBusy, fsm.Watching, fsm.CauseRetryWatch},
		{fsm.Watching, fsm.CauseInternalErrorInWindow, fsm.Watching, fsm.CauseRetryWatch},
		{fsm.Watching, fsm.CauseConnectFailed, fsm.Watching, fsm.CauseRetryWatch},
		{fsm.Watching, fsm.CauseStreamEndedQuickly, fsm.Watching, fsm.CauseRetryWatch},
		{fsm.Watching, fsm.CauseExpiredAgain, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Watching, fsm.CauseTooLargeRV, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Watching, fsm.CauseWatchRejectedOnce, fsm.Watching, fsm.CauseRetryWatch},
		{fsm.Watching, fsm.CauseWatchRejected, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Watching, fsm.CauseRelistDeferred, fsm.Relisting, fsm.CauseRetryRelist},
		{fsm.Watching, fsm.CauseServerUnreachable, fsm.Relisting, fsm.CauseRetryRelist},
	}
	waits := 0
	for _, row := range Table.Rows() {
		if row.To == fsm.Backoff {
			waits++
		}
	}
	require.Equal(t, waits, len(cases), "every row into fsm.Backoff is listed here")
	for _, c := range cases {
		row, ok := Table.Lookup(c.from, c.cause)
		require.True(t, ok, "%s --%s-->", c.from, c.cause)
		assert.Equal(t, fsm.Transition{From: c.from, Cause: c.cause, To: fsm.Backoff, Then: c.then}, row)
		timer, _ := Table.Resume(row.Then)
		assert.Equal(t, c.timer, timer, "%s --%s-->", c.from, c.cause)
	}
}

// fsm.Listing and fsm.Relisting differ in the start alone — fsm.CauseStart, or a start from a
// persisted snapshot with its probe's answers: every other cause either admits leads to the same
// place, or back to the state it came from (itself, or after a wait).
func TestListingAndRelistingDifferOnlyInStart(t *testing.T) {
	startOnly := []fsm.Cause{fsm.CauseStart, fsm.CauseStartFromSnapshot, fsm.CauseProbeItem, fsm.CauseResume, fsm.CauseSnapshotAhead,
		fsm.CauseProbeWhole, fsm.CauseSnapshotForeign, fsm.CauseVerifySnapshot, fsm.CauseSnapshotUnverifiable}
	for _, c := range fsm.Causes() {
		l, inListing := Table.Lookup(fsm.Listing, c)
		r, inRelisting := Table.Lookup(fsm.Relisting, c)
		if slices.Contains(startOnly, c) {
			assert.True(t, inListing)
			assert.False(t, inRelisting, "a relist is never the start")
			continue
		}
		require.Equal(t, inListing, inRelisting, "cause %s", c)
		if !inListing {
			continue
		}
		same := func(s, self fsm.State) fsm.State {
			if s == self {
				return 0xff
			}
			return s
		}
		assert.Equal(t, same(l.To, fsm.Listing), same(r.To, fsm.Relisting), "cause %s", c)
		if l.To == fsm.Backoff {
			assert.Equal(t, same(l.Then, fsm.Listing), same(r.Then, fsm.Relisting), "cause %s", c)
		}
	}
}

func TestLookupOutsideTheTable(t *testing.T) {
	_, ok := Table.Lookup(fsm.Stopped, fsm.CauseStop)
	assert.False(t, ok, "fsm.Stopped admits nothing")
	_, ok = Table.Lookup(fsm.Watching, fsm.NoCause)
	assert.False(t, ok)
	_, ok = Table.Lookup(fsm.Watching, fsm.CauseListComplete)
	assert.False(t, ok)
	_, ok = Table.Lookup(fsm.State(9), fsm.CauseStop)
	assert.False(t, ok)
	_, ok = Table.Lookup(fsm.Watching, fsm.Cause(250))
	assert.False(t, ok)
	_, ok = Table.Resume(fsm.Stopped)
	assert.False(t, ok, "no wait leads to fsm.Stopped")
	_, ok = Table.Resume(fsm.State(9))
	assert.False(t, ok)
	assert.Equal(t, []fsm.Cause{fsm.CauseRetryWatch, fsm.CauseRetryRelist, fsm.CauseRetryList, fsm.CauseStop}, Table.Permitted(fsm.Backoff))
}

// Every relist begins on a row that leaves fsm.Watching for a listing, at once or after a wait; the
// table says which, and a cause begins a relist exactly when its rows do.
func TestRowsThatBeginARelist(t *testing.T) {
	var begin []fsm.Cause
	for _, row := range Table.Rows() {
		if row.BeginsRelist() {
			begin = append(begin, row.Cause)
		}
		assert.Equal(t, row.BeginsRelist(), Table.BeginsRelist(row.Cause), "row %s --%s--> %s", row.From, row.Cause, row.To)
	}
	assert.Equal(t, []fsm.Cause{fsm.CauseInternalErrorPastWindow, fsm.CauseExpired, fsm.CauseExpiredAgain, fsm.CauseTooLargeRV,
		fsm.CauseWatchRejected, fsm.CauseRelistDeferred, fsm.CauseCatchUpMissed, fsm.CauseServerUnreachable}, begin)
	assert.False(t, fsm.Transition{From: fsm.Relisting, Cause: fsm.CauseListFailed, To: fsm.Backoff, Then: fsm.Relisting}.BeginsRelist(),
		"a relist's own retry is no new relist")
	assert.False(t, fsm.Transition{From: fsm.Backoff, Cause: fsm.CauseRetryRelist, To: fsm.Relisting}.BeginsRelist(),
		"the timer of a wait goes on with what its row began")
	assert.False(t, Table.BeginsRelist(fsm.NoCause))
	assert.False(t, Table.BeginsRelist(fsm.Cause(250)))
}

// Every cause has a rule with a label, and a label is no id: the diagrams say what a cause
// means, not what it is called.
func TestEveryCauseHasALabel(t *testing.T) {
	for _, c := range fsm.Causes() {
		require.NotNil(t, ruleOf[c], "cause %s has no rule", c)
		label := Table.Facts(c).Label
		require.NotEmpty(t, label, "cause %s has no label", c)
		assert.Equal(t, label, Table.Label(c))
	}
	assert.Equal(t, "Cause(200)", Table.Label(fsm.Cause(200)))
}

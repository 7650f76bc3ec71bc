package transitions

import (
	"fmt"
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

// Where each wait leads, by what its cause is (docs/semantics.md, failure rows): a listing's
// wait retries the listing it interrupted; a watch's wait either re-watches — its cause is a
// failure answered without a LIST (fsm.CauseFacts.AvoidsList: busy, broken, refused once) — or
// relists — its rows begin a relist (a rejected watch, a second 410, the one kube-apiserver
// unreachable, a relist held back) — and each goes on through the timer row into its Then.
func TestWaitDestinations(t *testing.T) {
	waits := 0
	for _, row := range Table.Rows() {
		if row.To != fsm.Backoff {
			continue
		}
		waits++
		name := fmt.Sprintf("%s --%s--> Backoff→%s", row.From, row.Cause, row.Then)
		facts := Table.Facts(row.Cause)
		switch row.From {
		case fsm.Listing, fsm.Relisting:
			assert.Equal(t, row.From, row.Then, "%s: a listing's wait retries it", name)
			assert.Equal(t, fsm.AvoidsNoList, facts.AvoidsList, name)
		case fsm.Watching:
			rewatches, relists := facts.AvoidsList != fsm.AvoidsNoList, Table.BeginsRelist(row.Cause)
			assert.True(t, rewatches != relists, "%s: a watch's wait re-watches (avoiding a LIST) or relists, one of the two", name)
			if rewatches {
				assert.Equal(t, fsm.Watching, row.Then, name)
			} else {
				assert.Equal(t, fsm.Relisting, row.Then, name)
			}
		default:
			t.Errorf("%s: only the listings and the watch wait", name)
		}
		timer, ok := Table.Resume(row.Then)
		require.True(t, ok, name)
		to, _ := Table.Target(fsm.Backoff, timer)
		assert.Equal(t, row.Then, to, "%s goes on through %s", name, timer)
	}
	assert.Positive(t, waits)
}

// fsm.ListingAndRelisting, which fsm.NewTable holds the table to when it loads: the start's
// causes — the rules that read the start or a persisted snapshot's probe alone
// (fsm.CauseFacts.Start) — are Listing's alone, and every other cause either admits leads to
// the same place, or back to the state it came from (itself, or after a wait).
func TestListingAndRelistingDifferOnlyInStart(t *testing.T) {
	assert.True(t, Table.Facts(fsm.CauseStart).Start)
	assert.True(t, Table.Facts(fsm.CauseStartFromSnapshot).Start)
	assert.False(t, Table.Facts(fsm.CauseListFailed).Start, "a failed probe is read as any failed LIST")
	for _, c := range fsm.Causes() {
		l, inListing := Table.Lookup(fsm.Listing, c)
		r, inRelisting := Table.Lookup(fsm.Relisting, c)
		if Table.Facts(c).Start {
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
	for _, st := range fsm.States() {
		var rows []fsm.Cause
		for _, row := range Table.Rows() {
			if row.From == st {
				rows = append(rows, row.Cause)
			}
		}
		assert.Equal(t, rows, Table.Permitted(st), "what %s permits is its rows' causes, in table order", st)
	}
	assert.Empty(t, Table.Permitted(fsm.Stopped))
}

// Every relist begins on a row that leaves fsm.Watching for a listing, at once or after a wait; the
// table says which, and a cause begins a relist exactly when its rows do.
func TestRowsThatBeginARelist(t *testing.T) {
	begin := 0
	for _, row := range Table.Rows() {
		assert.Equal(t, row.BeginsRelist(), Table.BeginsRelist(row.Cause), "row %s --%s--> %s", row.From, row.Cause, row.To)
		if !row.BeginsRelist() {
			continue
		}
		begin++
		facts := Table.Facts(row.Cause)
		assert.True(t, facts.Retry, "%s ends a watch that cannot be resumed: a retry", row.Cause)
		assert.Equal(t, fsm.AvoidsNoList, facts.AvoidsList, "%s lists", row.Cause)
	}
	assert.Positive(t, begin)
	assert.True(t, Table.BeginsRelist(fsm.CauseExpired), "a 410 relists")
	assert.False(t, Table.BeginsRelist(fsm.CauseServerBusy), "a 429 re-watches")
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

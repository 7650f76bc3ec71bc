package transitions

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// The table alone decides which causes a state admits: an event that reads as a cause the
// current state has no row for is ignored — the snapshot does not move, no command is given,
// Classify says NoCause — and nothing panics.
func TestCauseTheTableRefusesIsIgnored(t *testing.T) {
	m := MustNew(Config{})
	w := watching(t, m)
	listing, _ := m.Next(m.Initial(), fsm.Event{Kind: fsm.EvStart, Now: benchT0})
	stopped, _ := m.Next(w, fsm.Event{Kind: fsm.EvStop, Now: benchT0})
	// A timer id left in a snapshot outside Backoff: its firing reads as the retry it would be
	// in Backoff, which Watching has no row for.
	strayTimer := w
	strayTimer.Wait.Timer, strayTimer.Wait.Next = 77, fsm.Watching

	for _, c := range []struct {
		name string
		s    fsm.Snapshot
		e    fsm.Event
		// reads is the cause the event reads as, which the state does not admit.
		reads fsm.Cause
	}{
		{"a LIST page on the watch's request in Watching", w,
			fsm.Event{Kind: fsm.EvListPage, Now: benchT0, Request: w.Request, ResourceVersion: "500"}, fsm.CauseListComplete},
		{"a LIST failure on the watch's request in Watching", w,
			fsm.Event{Kind: fsm.EvListFailed, Now: benchT0, Request: w.Request, Failure: &fsm.Failure{Code: 429}}, fsm.CauseListFailed},
		{"a watch opening on the LIST's request in Listing", listing,
			fsm.Event{Kind: fsm.EvWatchOpened, Now: benchT0, Request: listing.Request}, fsm.CauseWatchOpened},
		{"a watch event on the LIST's request in Listing", listing,
			fsm.Event{Kind: fsm.EvWatchEvent, Now: benchT0, Request: listing.Request, Type: fsm.Added, Key: "a", ResourceVersion: "5"}, fsm.CauseWatchEvent},
		{"a watch error on the LIST's request in Listing", listing,
			fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: listing.Request, Failure: &fsm.Failure{Status: &metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}}}, fsm.CauseExpired},
		{"a timer firing in Watching", strayTimer,
			fsm.Event{Kind: fsm.EvTimerFired, Now: benchT0, Timer: 77}, fsm.CauseRetryWatch},
		{"a stop in Stopped", stopped, fsm.Event{Kind: fsm.EvStop, Now: benchT0}, fsm.CauseStop},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			require.Equal(t, c.reads, m.cause(&s, &c.e), "what the event reads as")
			_, admitted := Table.Lookup(s.State, c.reads)
			require.False(t, admitted, "%s has a row for %s", s.State, c.reads)

			assert.Equal(t, fsm.NoCause, m.Classify(&s, &c.e))
			var out []fsm.Command
			require.NotPanics(t, func() { out = m.Step(&s, &c.e, nil) })
			assert.Empty(t, out)
			assert.Equal(t, c.s, s, "the snapshot moved")
		})
	}
}

// Every event kind in every state: Step takes the table's row for what the event reads as, or
// ignores it when there is none.
func TestStepFollowsTheTable(t *testing.T) {
	m := MustNew(Config{})
	w := watching(t, m)
	listing, _ := m.Next(m.Initial(), fsm.Event{Kind: fsm.EvStart, Now: benchT0})
	busy := &fsm.Failure{Code: 429}
	backingOff, _ := m.Next(w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: w.Request, Failure: busy})
	relisting, _ := m.Next(w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: w.Request,
		Failure: &fsm.Failure{Status: &metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired}}})
	stopped, _ := m.Next(w, fsm.Event{Kind: fsm.EvStop, Now: benchT0})
	require.Equal(t, fsm.Backoff, backingOff.State)
	require.Equal(t, fsm.Relisting, relisting.State)

	admitted := map[fsm.State]int{}
	for _, s0 := range []fsm.Snapshot{m.Initial(), listing, w, backingOff, relisting, stopped} {
		for k := fsm.EvStart; k <= fsm.EvStop; k++ {
			s := s0
			e := fsm.Event{Kind: k, Now: benchT0, Request: s.Request, Timer: s.Wait.Timer, Type: fsm.Modified,
				Key: "a", ResourceVersion: "300"}
			if k == fsm.EvListFailed || k == fsm.EvWatchError || k == fsm.EvWatchOpenFailed {
				e.Failure = busy
			}
			row, ok := Table.Lookup(s.State, m.cause(&s, &e))
			out := m.Step(&s, &e, nil)
			if !ok {
				assert.Equal(t, s0, s, "%s in %s: ignored, yet the snapshot moved", k, s0.State)
				assert.Empty(t, out, "%s in %s", k, s0.State)
				continue
			}
			admitted[s0.State]++
			assert.Equal(t, row.To, s.State, "%s in %s", k, s0.State)
			assert.Equal(t, row.Cause, s.Cause, "%s in %s", k, s0.State)
			if row.To == fsm.Backoff {
				assert.Equal(t, row.Then, s.Wait.Next, "%s in %s: the wait leads where the row says", k, s0.State)
			}
		}
	}
	// Each live state took some of these events; Stopped took none.
	for _, st := range []fsm.State{fsm.Listing, fsm.Watching, fsm.Backoff, fsm.Relisting} {
		assert.Positive(t, admitted[st], "no event was admitted in %s", st)
	}
	assert.Zero(t, admitted[fsm.Stopped])
}

// A wait's timer takes the table's row into the Next the wait was armed with.
func TestTimerLeadsToNext(t *testing.T) {
	m := MustNew(Config{})
	w := watching(t, m)
	forbidden := &fsm.Failure{Status: &metav1.Status{Code: 403, Reason: metav1.StatusReasonForbidden}}
	for _, c := range []struct {
		failure  *fsm.Failure
		rejected bool // a watch was refused before
		next     fsm.State
	}{
		{&fsm.Failure{Code: 429}, false, fsm.Watching},
		{forbidden, false, fsm.Watching},
		{forbidden, true, fsm.Relisting},
	} {
		w := w
		if c.rejected {
			rejected.add(&w)
		}
		s, _ := m.Next(w, fsm.Event{Kind: fsm.EvWatchError, Now: benchT0, Request: w.Request, Failure: c.failure})
		require.Equal(t, fsm.Backoff, s.State)
		require.Equal(t, c.next, s.Wait.Next)
		timer, _ := Table.Resume(c.next)
		e := fsm.Event{Kind: fsm.EvTimerFired, Now: benchT0, Timer: s.Wait.Timer}
		assert.Equal(t, timer, m.Classify(&s, &e))
		s, _ = m.Next(s, e)
		assert.Equal(t, c.next, s.State)
	}
}

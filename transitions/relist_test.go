package transitions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

// holdRelistsUntil is a relist rule for tests: no relist begins before until.
func holdRelistsUntil(until time.Time) relistRule {
	return func(_ *fsm.Snapshot, now time.Time) time.Duration { return until.Sub(now) }
}

// relistPaths sets a machine up on the brink of each way a relist begins, and returns the event
// that begins it.
var relistPaths = []struct {
	name  string
	setup func(*play)
	event func(*play) fsm.Event
	// row is the row the event takes when no rule holds it back.
	row fsm.Cause
	// check holds what is particular to the cause, held back or not.
	check func(*testing.T, fsm.Snapshot)
}{
	{"410", func(p *play) { p.watching() }, failing(fsm.EvWatchOpenFailed, httpBare(410)), fsm.CauseExpired,
		func(t *testing.T, s fsm.Snapshot) { assert.Equal(t, 1, expiredStreak.count(&s)) }},
	{"too large RV", func(p *play) { p.watching() }, failing(fsm.EvWatchOpenFailed, httpStatus(504, tooLargeRVStatus())), fsm.CauseTooLargeRV,
		func(t *testing.T, s fsm.Snapshot) { assert.True(t, s.RVUnusable, "the relist asks for RV \"\"") }},
	{"InternalError past the window", func(p *play) {
		p.watching()
		for range DefaultInternalErrorRewatches {
			p.watchFails(500).fire()
		}
	}, failing(fsm.EvWatchOpenFailed, httpBare(500)), fsm.CauseInternalErrorPastWindow, func(*testing.T, fsm.Snapshot) {}},
	{"a second 410", func(p *play) { p.watching().watchFails(410).page("200", "") }, failing(fsm.EvWatchOpenFailed, httpBare(410)),
		fsm.CauseExpiredAgain, func(t *testing.T, s fsm.Snapshot) { assert.Equal(t, 2, expiredStreak.count(&s)) }},
	{"a second refusal", func(p *play) { p.watching().watchFails(403).fire() }, failing(fsm.EvWatchOpenFailed, httpBare(403)),
		fsm.CauseWatchRejected, func(t *testing.T, s fsm.Snapshot) { assert.Positive(t, rejected.count(&s)) }},
}

// Without a rule every relist begins as its row says — at once, or when its wait is over — and
// is noted in the history when its first LIST goes out.
func TestEveryRelistIsNotedWhenItsListGoesOut(t *testing.T) {
	for _, c := range relistPaths {
		t.Run(c.name, func(t *testing.T) {
			p := newPlay(t, Config{})
			c.setup(p)
			before := p.s.Relists.Count
			e := c.event(p)
			require.Equal(t, c.row, p.m.Classify(&p.s, &e))
			out := p.m.Step(&p.s, &e, nil)
			require.Equal(t, c.row, p.s.Cause)
			c.check(t, p.s)
			if p.s.State == fsm.Backoff {
				assert.Equal(t, before, p.s.Relists.Count, "not yet: the LIST goes out after the wait")
				p.fire()
				out = nil
				require.Equal(t, fsm.Relisting, p.s.State)
			} else {
				require.Equal(t, fsm.Relisting, p.s.State)
				out = commandsOf(out, fsm.CmdListPage)
			}
			assert.Equal(t, before+1, p.s.Relists.Count)
			began, _ := p.s.Relists.Recent(0)
			assert.Equal(t, p.now, began)
			if out != nil {
				assert.Len(t, out, 1, "the relist's LIST")
			}
		})
	}
}

// A rule that holds relists back holds back every one of them, whichever row begins it: a
// relist due at once takes the deferred row and waits exactly what the rule asks, without
// advancing the backoff; a relist due after a wait waits at least that long. What the failure
// itself means is kept either way, and the relist is noted when its LIST goes out.
func TestARelistRuleHoldsBackEveryRelist(t *testing.T) {
	const hold = 7 * time.Minute
	for _, c := range relistPaths {
		t.Run(c.name, func(t *testing.T) {
			p := newPlay(t, Config{})
			c.setup(p)
			p.m.relistRules = []relistRule{holdRelistsUntil(p.now.Add(hold))}
			before := p.s
			e := c.event(p)
			want, _ := Table.Lookup(fsm.Watching, c.row)
			if want.To == fsm.Relisting {
				want = deferredRelist()
			}
			assert.Equal(t, want.Cause, p.m.Classify(&p.s, &e), "Classify says what Step does")
			out := p.m.Step(&p.s, &e, nil)
			require.Equal(t, want.Cause, p.s.Cause)
			require.Equal(t, fsm.Backoff, p.s.State)
			assert.Equal(t, fsm.Relisting, p.s.Wait.Next)
			c.check(t, p.s)
			assert.Empty(t, commandsOf(out, fsm.CmdListPage), "no LIST before the rule allows")
			arms := commandsOf(out, fsm.CmdArmTimer)
			require.Len(t, arms, 1)
			assert.Equal(t, hold, arms[0].Delay, "the rule's wait is longer than any backoff step here")
			if want.Cause == fsm.CauseRelistDeferred {
				assert.Equal(t, before.Wait.Attempt, p.s.Wait.Attempt, "a held-back relist is no failure streak")
			}
			assert.Equal(t, before.Relists.Count, p.s.Relists.Count)

			p.now = p.now.Add(hold)
			out = p.m.Step(&p.s, &fsm.Event{Kind: fsm.EvTimerFired, Now: p.now, Timer: p.s.Wait.Timer}, nil)
			require.Equal(t, fsm.Relisting, p.s.State)
			require.Len(t, out, 1)
			assert.True(t, listRequest(out[0]))
			assert.Equal(t, before.Relists.Count+1, p.s.Relists.Count)
			began, _ := p.s.Relists.Recent(0)
			assert.Equal(t, p.now, began)
		})
	}
}

// A rule whose wait has passed holds nothing back; and a relist's own retries — a LIST that
// failed and is asked again after its wait, a first page asked again at RV "" — are the same
// relist, not new ones.
func TestARelistIsCountedOnce(t *testing.T) {
	p := newPlay(t, Config{})
	p.watching()
	p.m.relistRules = []relistRule{holdRelistsUntil(p.now)}
	p.watchFails(410)
	require.Equal(t, fsm.CauseExpired, p.s.Cause, "a rule whose time has come holds nothing back")
	require.Equal(t, 1, p.s.Relists.Count)

	p.step(failing(fsm.EvListFailed, httpBare(500))(p))
	require.Equal(t, fsm.Backoff, p.s.State)
	p.fire()
	require.Equal(t, fsm.CauseRetryRelist, p.s.Cause)
	p.step(failing(fsm.EvListFailed, httpBare(410))(p))
	require.Equal(t, fsm.CauseListExpired, p.s.Cause)
	p.page("300", "")
	require.Equal(t, fsm.Watching, p.s.State)
	assert.Equal(t, 1, p.s.Relists.Count)
}

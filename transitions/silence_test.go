package transitions

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

// silenceSim plays a watch against the machine on a simulated clock: frames when the stream
// delivers them, and the machine's deadline (fsm.CmdWatchDeadline) when it is due before the
// next frame. It records every watch the machine asks for.
type silenceSim struct {
	t       *testing.T
	m       *Machine
	s       fsm.Snapshot
	now     time.Time
	rv      int
	due     time.Time // the armed deadline (zero: none)
	watches []fsm.Command
	causes  map[fsm.Cause]int
	// silent is how long after the last frame each watch-silent re-watch came.
	silent []time.Duration
}

func newSilenceSim(t *testing.T, cfg Config) *silenceSim {
	cfg.Seed = 1
	m := MustNew(cfg)
	sim := &silenceSim{t: t, m: m, s: m.Initial(), now: benchT0, rv: 100, causes: map[fsm.Cause]int{}}
	e := fsm.Event{Kind: fsm.EvStart, Now: sim.now} // the first LIST: the one the run may make
	m.Step(&sim.s, &e, nil)
	sim.step(fsm.Event{Kind: fsm.EvListPage, Request: sim.s.Request, ResourceVersion: "100"})
	sim.step(fsm.Event{Kind: fsm.EvWatchOpened, Request: sim.s.Request})
	return sim
}

func (sim *silenceSim) step(e fsm.Event) {
	sim.t.Helper()
	e.Now = sim.now
	lastFrame := sim.s.Watch.Silence.LastFrame.Time()
	out := sim.m.Step(&sim.s, &e, nil)
	require.NotEqual(sim.t, fsm.NoCause, sim.s.Cause, "event %s ignored", e)
	sim.causes[sim.s.Cause]++
	if sim.s.Cause == fsm.CauseWatchSilent {
		sim.silent = append(sim.silent, sim.now.Sub(lastFrame))
	}
	for _, c := range out {
		switch c.Kind {
		case fsm.CmdOpenWatch:
			sim.watches = append(sim.watches, c)
		case fsm.CmdWatchDeadline:
			sim.due = sim.now.Add(c.Delay)
		case fsm.CmdCancelTimer:
			sim.due = time.Time{}
		case fsm.CmdListPage, fsm.CmdArmTimer:
			sim.t.Fatalf("%s at %s: a silent watch is re-watched, never listed or waited on", c, sim.now.Sub(benchT0))
		}
	}
	if sim.s.Watch.Silence.Timer == 0 {
		sim.due = time.Time{}
	}
}

// until moves the clock to at, firing the deadline first if it is due on the way.
func (sim *silenceSim) until(at time.Time) {
	for !sim.due.IsZero() && !sim.due.After(at) {
		sim.now, sim.due = sim.due, time.Time{}
		sim.step(fsm.Event{Kind: fsm.EvTimerFired, Timer: sim.s.Watch.Silence.Timer})
		if sim.s.Watch.Silence.Timer == 0 {
			sim.due = time.Time{}
		}
	}
	sim.now = at
}

// frame delivers one event (or a bookmark) at at on the watch in flight, opening it first if
// the machine has just asked for it.
func (sim *silenceSim) frame(at time.Time, typ fsm.WatchEventType) {
	sim.until(at)
	if !sim.s.Watch.Open {
		sim.step(fsm.Event{Kind: fsm.EvWatchOpened, Request: sim.s.Request})
	}
	sim.rv++
	sim.step(fsm.Event{Kind: fsm.EvWatchEvent, Request: sim.s.Request, Type: typ, Key: "ns/a", ResourceVersion: strconv.Itoa(sim.rv)})
}

// every delivers a frame every gap for d.
func (sim *silenceSim) every(gap, d time.Duration, typ fsm.WatchEventType) {
	end := sim.now.Add(d)
	for at := sim.now.Add(gap); !at.After(end); at = at.Add(gap) {
		sim.frame(at, typ)
	}
}

// docs/semantics.md "silent watch": a stream that was delivering and falls silent is re-watched
// from its last RV well before the apiserver's watch cache (at least 75 s of history) can let
// go of that RV, whatever its cadence, and no sooner than the floor: 5 s for anything busier
// than one frame every 1.25 s, four gaps for slower streams, at most 45 s.
func TestABusyStreamThatFallsSilentIsReplacedBeforeItsRVExpires(t *testing.T) {
	for _, c := range []struct {
		gap  time.Duration
		want time.Duration
	}{
		{50 * time.Millisecond, 5 * time.Second},
		{250 * time.Millisecond, 5 * time.Second},
		{time.Second, 5 * time.Second},
		{2 * time.Second, 8 * time.Second},
		{5 * time.Second, 20 * time.Second},
		{10 * time.Second, 40 * time.Second},
		{20 * time.Second, 45 * time.Second},
	} {
		t.Run(fmt.Sprintf("every %v", c.gap), func(t *testing.T) {
			sim := newSilenceSim(t, Config{})
			sim.every(c.gap, 10*time.Minute, fsm.Modified)
			last, lastRV := sim.now, sim.s.LastRV
			watches := len(sim.watches)
			require.Zero(t, sim.causes[fsm.CauseWatchSilent], "a steady stream is never cut")

			sim.until(last.Add(time.Hour)) // the stall
			require.Greater(t, len(sim.watches), watches, "the silent stream was replaced")
			rewatch := sim.watches[watches]
			assert.Equal(t, lastRV, rewatch.ResourceVersion, "from the last RV")
			assert.True(t, rewatch.FreshConnection, "on a fresh connection")
			require.NotEmpty(t, sim.silent)
			assert.Equal(t, c.want, sim.silent[0], "replaced after this much silence")
			assert.Less(t, sim.silent[0], 75*time.Second, "before the watch cache's history lets go of the RV")
			// The re-watches of one silence come further and further apart, and stop once the
			// bound reaches WatchSilence (the transport's, not played here).
			for i := 1; i < len(sim.silent); i++ {
				assert.Greater(t, sim.silent[i], sim.silent[i-1])
			}
			assert.LessOrEqual(t, len(sim.silent), 4, "a silence is not cut again and again: %v", sim.silent)
		})
	}
}

// docs/semantics.md "silent watch": a quiet healthy watch — nothing but the apiserver's
// bookmarks, the first of each watch after 60 or 120 s, then one a minute, each watch ended by
// its timeout after 5–10 minutes — is never cut by the silence rule, over hours.
func TestAQuietHealthyWatchIsNotCut(t *testing.T) {
	for _, busyFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy first: %v", busyFirst), func(t *testing.T) {
			sim := newSilenceSim(t, Config{})
			if busyFirst {
				// A resource written every 250 ms that then falls quiet for good: the cuts of
				// that one silence are allowed, none after it.
				sim.every(250*time.Millisecond, 5*time.Minute, fsm.Modified)
			}
			start := sim.now
			first := []time.Duration{120 * time.Second, 60 * time.Second}
			for w := 0; sim.now.Sub(start) < 3*time.Hour; w++ {
				req := sim.s.Request
				opened := sim.now
				timeout := time.Duration(sim.watches[len(sim.watches)-1].TimeoutSeconds) * time.Second
				at := opened.Add(first[w%2])
				for at.Before(opened.Add(timeout)) {
					sim.frame(at, fsm.Bookmark)
					if sim.s.Request != req {
						break
					}
					at = at.Add(time.Minute)
				}
				if sim.s.Request == req {
					sim.until(opened.Add(timeout))
					if sim.s.Request == req {
						sim.step(fsm.Event{Kind: fsm.EvWatchEnded, Request: req})
					}
				}
			}
			cuts := sim.causes[fsm.CauseWatchSilent]
			t.Logf("cut after %v of silence", sim.silent)
			if busyFirst {
				assert.LessOrEqual(t, cuts, 3, "the busy stream's last silence: %v", sim.silent)
				for _, d := range sim.silent {
					assert.Less(t, d, 3*time.Minute, "every cut belongs to the busy stream's last silence")
				}
			} else {
				assert.Zero(t, cuts, "a quiet healthy watch is never cut: %v", sim.silent)
			}
			assert.Zero(t, sim.s.Watch.Silence.Timer, "a quiet stream has no deadline")
		})
	}
}

// docs/semantics.md "silent watch": a quiet stream that turns busy is bounded again within
// half a minute, and at the floor within two: its cadence loses 1/64 at every frame.
func TestAStreamThatSpeedsUpIsBoundedWithinAMinute(t *testing.T) {
	sim := newSilenceSim(t, Config{})
	sim.every(time.Minute, 30*time.Minute, fsm.Bookmark)
	_, bounded := sim.m.activeSilence(&sim.s)
	require.False(t, bounded, "a quiet stream is WatchSilence's")
	sim.every(250*time.Millisecond, 30*time.Second, fsm.Modified)
	b, bounded := sim.m.activeSilence(&sim.s)
	require.True(t, bounded)
	assert.LessOrEqual(t, b, 45*time.Second)
	sim.every(250*time.Millisecond, 90*time.Second, fsm.Modified)
	b, _ = sim.m.activeSilence(&sim.s)
	assert.Equal(t, 5*time.Second, b)
}

// The rule is off with a negative ActiveWatchSilence, or with WatchSilence off, and the
// bound never exceeds WatchSilence.
func TestSilenceRuleConfiguration(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want time.Duration // 0: not bounded by the rule
	}{
		{"default", Config{}, 5 * time.Second},
		{"off", Config{ActiveWatchSilence: -1}, 0},
		{"watch silence off", Config{WatchSilence: -1}, 0},
		{"floor", Config{ActiveWatchSilenceFloor: 2 * time.Second}, 2 * time.Second},
		{"under watch silence", Config{WatchSilence: 3 * time.Second}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			sim := newSilenceSim(t, c.cfg)
			sim.every(250*time.Millisecond, time.Minute, fsm.Modified)
			b, ok := sim.m.activeSilence(&sim.s)
			assert.Equal(t, c.want, b)
			assert.Equal(t, c.want != 0, ok)
		})
	}
	_, err := New(Config{ActiveWatchSilenceFloor: time.Millisecond})
	assert.ErrorContains(t, err, "ActiveWatchSilenceFloor")
	_, err = New(Config{ActiveWatchSilence: time.Millisecond})
	assert.ErrorContains(t, err, "ActiveWatchSilence")
}

package fsm_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transitions/fsmcheck"
)

// run is one random sequence: the machine, and every event with its outcome.
type run struct {
	m      *transitions.Machine
	steps  []runStep
	events []fsm.Event
}

type runStep struct {
	gen           generated
	before, after fsm.Snapshot
	cause         fsm.Cause
	commands      []fsm.Command
}

// drawRun plays 1–200 model-server events against a machine with a drawn configuration.
func drawRun(t *rapid.T) run {
	m := transitions.MustNew(drawConfig(t))
	ms := &modelServer{now: t0}
	s := m.Initial()
	r := run{m: m}
	n := rapid.IntRange(1, 200).Draw(t, "events")
	for range n {
		g := ms.next(t, &s)
		before := s
		cause := m.Classify(&s, &g.event)
		var cmds []fsm.Command
		s, cmds = m.Next(s, g.event)
		for _, c := range cmds {
			switch c.Kind {
			case fsm.CmdArmTimer:
				ms.lastDelay = c.Delay
			case fsm.CmdWatchDeadline:
				ms.deadlineDue = g.event.Now.Add(c.Delay)
			case fsm.CmdAsk:
				ms.asking = c
			}
		}
		r.steps = append(r.steps, runStep{gen: g, before: before, after: s, cause: cause, commands: cmds})
		r.events = append(r.events, g.event)
	}
	return r
}

func rvNum(t *rapid.T, rv string) int64 {
	if rv == "" || rv == "0" {
		return 0
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not one the model handed out", rv)
	}
	return n
}

func has(cmds []fsm.Command, k fsm.CommandKind) bool {
	for _, c := range cmds {
		if c.Kind == k {
			return true
		}
	}
	return false
}

// docs/semantics.md failure rows for 429, InternalError inside the window, connection refused and
// stream ends: the answer is always a re-watch, never a LIST — now or when the backoff ends.
// The exception is "One kube-apiserver": told so, a watch that could not reach it (refused,
// 502 from a gateway) relists after the backoff, and nothing else is read so.
func TestPropertyNoListAfterRetryableWatchFailure(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		for i, st := range r.steps {
			if st.before.State != fsm.Watching || st.gen.stale || st.gen.event.Kind == fsm.EvStop {
				continue
			}
			if st.cause == fsm.CauseServerUnreachable {
				f := st.gen.event.Failure
				if !r.m.Config().SingleServer || f == nil || (f.Transport != fsm.Refused && f.Code != 502 && (f.Status == nil || f.Status.Code != 502)) {
					t.Fatalf("step %d: %s read as %s", i, st.gen.event, st.cause)
				}
				if st.after.State != fsm.Backoff || st.after.Wait.Next != fsm.Relisting || has(st.commands, fsm.CmdListPage) {
					t.Fatalf("step %d: %s: %s, not a wait for a relist", i, st.gen.event, st.cause)
				}
				continue
			}
			retryable := st.gen.kind == fkBusy || st.gen.kind == fkTransport || st.gen.kind == fkStreamEnd ||
				(st.gen.kind == fkInternal && st.cause == fsm.CauseInternalErrorInWindow)
			if !retryable {
				continue
			}
			if has(st.commands, fsm.CmdListPage) {
				t.Fatalf("step %d: %s after %s emitted a LIST: %v", i, st.cause, st.gen.event, st.commands)
			}
			if st.after.State == fsm.Backoff && st.after.Wait.Next != fsm.Watching {
				t.Fatalf("step %d: %s leads to %s after the backoff, not a re-watch", i, st.gen.event, st.after.Wait.Next)
			}
			if st.after.State != fsm.Backoff && st.after.State != fsm.Watching {
				t.Fatalf("step %d: %s left Watching for %s", i, st.gen.event, st.after.State)
			}
		}
	})
}

// docs/semantics.md "WATCH ... resourceVersion=<last observed>": every re-watch resumes from the last
// RV observed, and the RVs the machine acts on never go backwards.
func TestPropertyRewatchUsesLastRVAndRVsNeverGoBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		var highest int64
		for i, st := range r.steps {
			if n := rvNum(t, st.after.LastRV); n < highest {
				t.Fatalf("step %d: last RV went back from %d to %d", i, highest, n)
			} else {
				highest = n
			}
			for _, c := range st.commands {
				switch {
				case c.Kind == fsm.CmdOpenWatch && !c.SendInitialEvents:
					if c.ResourceVersion != st.after.LastRV || c.ResourceVersion == "" {
						t.Fatalf("step %d: watch from %q, last observed %q", i, c.ResourceVersion, st.after.LastRV)
					}
				case c.Kind == fsm.CmdListPage && c.Continue == "" && st.before.Synced:
					// A relist asks at the last RV, or "" once the server refused it.
					if c.ResourceVersion != st.before.LastRV && c.ResourceVersion != "" {
						t.Fatalf("step %d: relist at %q, last observed %q", i, c.ResourceVersion, st.before.LastRV)
					}
				case c.Kind == fsm.CmdApply || c.Kind == fsm.CmdReplaceStore:
					if rvNum(t, c.ResourceVersion) > highest {
						t.Fatalf("step %d: store told RV %s beyond last observed %d", i, c.ResourceVersion, highest)
					}
				}
			}
		}
	})
}

// docs/semantics.md "Waiting": each wait is the capped Retry-After when the server gave one (a
// value under a second is no hint) and then leaves the backoff where it was; otherwise it lies
// within the backoff's bounds for its attempt, cut by the resume-RV age guard for a re-watch,
// and never under MinWait; the first refusal since a watch was accepted waits the backoff's
// first step, whatever its attempt. A Retry-After is waited exactly unless it repeats one
// honoured earlier with no request accepted in between (a LIST page, an opened watch, a watch
// frame, tracked here from the events alone) and no wait of the reflector's own (the
// backoff's, or a relist rule's longer than the Retry-After): then the wait lies in
// [RA, RA × (1 + spread)), and the spread stops at the cap and, for a re-watch, at the resume
// RV's lifetime.
func TestPropertyWaitsAreRetryAfterOrBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		cfg := r.m.Config()
		honoured := false // a Retry-After was honoured since the server last accepted a request
		for i, st := range r.steps {
			if st.cause != fsm.NoCause {
				switch st.gen.event.Kind {
				case fsm.EvListPage, fsm.EvWatchOpened, fsm.EvWatchEvent:
					honoured = false
				}
			}
			for _, c := range st.commands {
				if c.Kind != fsm.CmdArmTimer {
					continue
				}
				ra := st.gen.retryAfter
				// raBounds is the wait a usable Retry-After allows.
				raBounds := func() (lo, hi time.Duration) {
					want := min(ra, cfg.RetryAfterCap)
					lo, hi = want, want
					if honoured && cfg.RetryAfterSpread > 0 {
						hi = min(want+time.Duration(float64(want)*cfg.RetryAfterSpread), cfg.RetryAfterCap)
						if limit, on := resumeGuard(cfg, st); on {
							hi = max(want, min(hi, limit))
						}
					}
					return lo, hi
				}
				if transitions.Table.Facts(c.Reason).Answer {
					// The caller's answer said how long (a hook that answers with a wait).
					honoured = false
					continue
				}
				if r.m.HoldsRelists() && transitions.Table.BeginsRelist(c.Reason) {
					// A relist's wait is its relist rules' to lengthen (TestPropertyRelistCapHolds).
					// One they lengthened past the Retry-After is theirs, not the server's, and
					// the next Retry-After is a first one again, as after the backoff's own wait.
					lo, hi := raBounds()
					honoured = c.Reason != fsm.CauseRelistDeferred && ra >= transitions.MinRetryAfter && c.Delay >= lo && c.Delay <= hi
					continue
				}
				if ra >= transitions.MinRetryAfter {
					lo, hi := raBounds()
					if c.Delay < lo || c.Delay > hi {
						t.Fatalf("step %d: waited %v, Retry-After %v capped at %v, repeated %v, spread %v: want [%v, %v]",
							i, c.Delay, ra, cfg.RetryAfterCap, honoured, cfg.RetryAfterSpread, lo, hi)
					}
					if st.after.Wait.Attempt != st.before.Wait.Attempt {
						t.Fatalf("step %d: an honoured Retry-After moved the backoff from attempt %d to %d", i, st.before.Wait.Attempt, st.after.Wait.Attempt)
					}
					honoured = true
					continue
				}
				// The backoff's own wait: the next Retry-After is a first one again. The first
				// refusal since a watch was accepted — of a watch, or of a LIST since a listing
				// completed too — waits the backoff's first step, and the backoff advances all
				// the same (docs/semantics.md, "watch refused", "LIST fails").
				honoured = false
				from := st.before.Wait.Attempt
				if c.Reason == fsm.CauseWatchRejectedOnce || c.Reason == fsm.CauseListRejected && st.before.Watch.Rejected.Count(&st.before.Moments) == 0 {
					from = 0
				}
				lo, hi := bounds(cfg, from)
				guard := func(d time.Duration) time.Duration {
					if limit, on := resumeGuard(cfg, st); on {
						d = min(d, limit)
					}
					return max(d, transitions.MinWait)
				}
				if c.Delay < guard(lo) || c.Delay > guard(hi-1) {
					t.Fatalf("step %d: waited %v; backoff attempt %d allows [%v, %v), guarded [%v, %v]",
						i, c.Delay, from, lo, hi, guard(lo), guard(hi-1))
				}
				if st.after.Wait.Attempt != st.before.Wait.Attempt+1 {
					t.Fatalf("step %d: a backoff wait moved attempt from %d to %d", i, st.before.Wait.Attempt, st.after.Wait.Attempt)
				}
			}
		}
	})
}

// resumeGuard is the longest a re-watch armed at st may wait under docs/semantics.md's
// resume-RV age guard, max(1 s, lifetime − age); on is false when the guard does not apply (the
// wait leads elsewhere, or the RV has outlived its lifetime).
func resumeGuard(cfg transitions.Config, st runStep) (limit time.Duration, on bool) {
	if st.after.Wait.Next != fsm.Watching {
		return 0, false
	}
	age := st.gen.event.Now.Sub(st.before.RVAdvancedAt)
	if age >= cfg.ResumeRVLifetime {
		return 0, false
	}
	return max(transitions.MinResumeWait, cfg.ResumeRVLifetime-age), true
}

// docs/semantics.md "resume-RV age guard": while the resume RV is younger than its lifetime, no
// re-watch waits longer than max(1 s, lifetime − age), unless the server asked for longer.
func TestPropertyRewatchWaitsWithinResumeLifetime(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		cfg := r.m.Config()
		for i, st := range r.steps {
			if !has(st.commands, fsm.CmdArmTimer) || st.gen.retryAfter >= transitions.MinRetryAfter {
				continue
			}
			limit, on := resumeGuard(cfg, st)
			if !on {
				continue
			}
			if d := st.commands[len(st.commands)-1].Delay; d > limit {
				t.Fatalf("step %d: re-watch waits %v with the resume RV %v old; at most %v", i, d, st.gen.event.Now.Sub(st.before.RVAdvancedAt), limit)
			}
		}
	})
}

// docs/semantics.md "reset on progress": the backoff returns to its first step exactly when a
// watch moves the last observed RV; nothing else (a LIST page, a watch that opens and delivers
// nothing, an honoured Retry-After) resets it. kube-rs's reset-on-every-Ok is the bug to avoid.
func TestPropertyBackoffResetsOnProgressOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		for i, st := range r.steps {
			moved := st.cause == fsm.CauseWatchEvent && st.after.LastRV != st.before.LastRV
			switch {
			case moved && st.after.Wait.Attempt != 0:
				t.Fatalf("step %d: the RV moved %s→%s but attempt is %d", i, st.before.LastRV, st.after.LastRV, st.after.Wait.Attempt)
			case !moved && st.after.Wait.Attempt < st.before.Wait.Attempt:
				t.Fatalf("step %d: %s (%s) reset attempt %d→%d without progress", i, st.gen.event, st.cause, st.before.Wait.Attempt, st.after.Wait.Attempt)
			}
		}
	})
}

func bounds(cfg transitions.Config, attempt int) (time.Duration, time.Duration) {
	return cfg.Backoff.(interface {
		Bounds(int) (time.Duration, time.Duration)
	}).Bounds(attempt)
}

// Under continuous failure the waits grow step by step to the cap and stay there.
func TestPropertyDelaysGrowToCap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		// Told there is one kube-apiserver, a refused connection relists (server-unreachable):
		// the waits measured here are those of failures the watch retries.
		cfg.WatchList, cfg.SingleServer = false, false
		m := transitions.MustNew(cfg)
		s := m.Initial()
		s, _ = m.Next(s, fsm.Event{Kind: fsm.EvStart, Now: t0})
		s, _ = m.Next(s, fsm.Event{Kind: fsm.EvListPage, Now: t0, Request: s.Request, ResourceVersion: "10"})
		// The first failure comes once the resume RV has outlived its guard, so that the
		// backoff alone decides every wait.
		ms := &modelServer{now: t0.Add(m.Config().ResumeRVLifetime)}
		capLo, _ := bounds(m.Config(), 1<<20)
		reachedCap := false
		for attempt := range 40 {
			g := ms.failure(t, fsm.Event{Kind: fsm.EvWatchOpenFailed, Now: ms.now, Request: s.Request}, true)
			if g.kind != fkBusy && g.kind != fkTransport {
				g = generated{event: fsm.Event{Kind: fsm.EvWatchOpenFailed, Now: ms.now, Request: s.Request, Failure: &fsm.Failure{Transport: fsm.Refused}}, kind: fkTransport}
			}
			g.event.Failure.HasRetryAfter = false
			g.event.Failure.Status = nil
			var cmds []fsm.Command
			s, cmds = m.Next(s, g.event)
			require.Equal(t, fsm.Backoff, s.State)
			d := cmds[len(cmds)-1].Delay
			lo, hi := bounds(m.Config(), attempt)
			lo, hi = max(lo, transitions.MinWait), max(hi, transitions.MinWait+1)
			if d < lo || d >= hi {
				t.Fatalf("attempt %d: %v outside [%v, %v)", attempt, d, lo, hi)
			}
			if lo >= capLo {
				reachedCap = true
			} else if reachedCap {
				t.Fatalf("attempt %d: fell below the cap after reaching it", attempt)
			}
			ms.now = ms.now.Add(d)
			s, _ = m.Next(s, fsm.Event{Kind: fsm.EvTimerFired, Now: ms.now, Timer: s.Wait.Timer})
		}
		if !reachedCap {
			t.Fatalf("40 failures never reached the cap")
		}
	})
}

// docs/semantics.md "stop": from any state, Stop yields Stopped with no armed timer, no request in
// flight, and no command ever again.
func TestPropertyStopFromAnyState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		last := r.steps[len(r.steps)-1].after
		ms := &modelServer{now: r.steps[len(r.steps)-1].gen.event.Now}
		s, cmds := r.m.Next(last, fsm.Event{Kind: fsm.EvStop, Now: ms.now})
		require.Equal(t, fsm.Stopped, s.State)
		require.Zero(t, s.Wait.Timer)
		require.Zero(t, s.Request)
		if last.State != fsm.Stopped {
			require.NotEmpty(t, cmds)
			require.Equal(t, fsm.CmdStopped, cmds[len(cmds)-1].Kind)
			require.Equal(t, last.Wait.Timer != 0, has(cmds, fsm.CmdCancelTimer), "cancel-timer iff one was armed: %v", cmds)
			require.Equal(t, last.Request != 0, has(cmds, fsm.CmdCancelRequest), "cancel-request iff one was in flight: %v", cmds)
		}
		for range rapid.IntRange(1, 20).Draw(t, "after") {
			g := ms.next(t, &s)
			var more []fsm.Command
			s, more = r.m.Next(s, g.event)
			require.Empty(t, more, "command after Stopped for %s", g.event)
			require.Equal(t, fsm.Stopped, s.State)
		}
	})
}

// docs/design.md "The hot path and stateless": every transition Step takes is one the table
// allows, checked against the qmuntal/stateless machine built from transitions.Table, and every wait
// leads where its row's Then says.
func TestPropertyEveryTransitionIsInTheTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		for i, st := range r.steps {
			if st.cause == fsm.NoCause {
				require.Equal(t, st.before, st.after, "step %d: an ignored event changed the snapshot", i)
				require.Empty(t, st.commands, "step %d: an ignored event emitted commands", i)
				continue
			}
			if err := fsmcheck.CheckStep(st.before, st.cause, st.after); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
	})
}

// docs/design.md "Replay": replaying the event log reproduces the identical states and commands.
func TestPropertyReplayIsIdentical(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		s := r.m.Initial()
		for i, e := range r.events {
			var cmds []fsm.Command
			s, cmds = r.m.Next(s, e)
			require.Equal(t, r.steps[i].after, s, "step %d", i)
			require.Equal(t, r.steps[i].commands, cmds, "step %d", i)
		}
	})
}

// No hot loop: without progress (a page, a watch event, or a watch that stayed open for the
// quick-end threshold) the machine issues a bounded number of requests before it waits on a
// timer, whatever the server answers. The longest chain docs/semantics.md allows without a
// wait: the watch, the immediate re-watches after quick ends until QuickEndsBeforeBackoff of
// them back off, the relist at the last RV after a 410 or too-large RV ("Relist after a watch
// failure"), and the first page retried at once at "" when that LIST is itself answered so
// ("LIST").
func TestPropertyNoHotLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		limit := 1 + (r.m.Config().QuickEndsBeforeBackoff - 1) + 1 + 1
		requests := 0
		var since time.Time
		for i, st := range r.steps {
			k, now := st.gen.event.Kind, st.gen.event.Now
			if st.cause == fsm.CauseListPageMore || st.cause == fsm.CauseListComplete || k == fsm.EvWatchEvent ||
				k == fsm.EvTimerFired || now.Sub(since) >= r.m.Config().QuickWatch {
				requests, since = 0, now
			}
			for _, c := range st.commands {
				switch c.Kind {
				case fsm.CmdArmTimer:
					requests = 0
				case fsm.CmdListPage, fsm.CmdOpenWatch:
					requests++
				}
			}
			if requests > limit {
				t.Fatalf("step %d: %d requests without progress or a wait", i, requests)
			}
		}
	})
}

// docs/semantics.md "Requests": the first LIST and every continue page ask for a limit; a
// relist at a known RV asks for none until the answer to a LIST at RV 0 has carried a continue
// token (the server pages: no watch cache serves the resource), a whole list could not be taken
// ("A list that cannot be served whole"), or PageRelists is set, and from then on asks for
// one. A paged answer to any other LIST changes nothing. Tracked here from the events alone.
func TestPropertyRelistPagesOnlyWhereTheServerPages(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		cfg := r.m.Config()
		serverPages, wholeFailed := false, false
		for i, st := range r.steps {
			if st.cause == fsm.CauseWholeListRefused {
				wholeFailed = true // and the LIST this step gives already pages
			}
			for _, c := range st.commands {
				if c.Kind != fsm.CmdListPage || cfg.PageSize <= 0 {
					continue
				}
				atKnownRV := c.Continue == "" && c.ResourceVersion != "" && c.ResourceVersion != "0"
				fallback := st.after.List.Full
				want := !fallback && (!atKnownRV || serverPages || wholeFailed || cfg.PageRelists)
				if got := c.Limit > 0; got != want {
					t.Fatalf("step %d: %v asks for a limit: %v, want %v (server paged at RV 0 before: %v, a whole list failed: %v)", i, c, got, want, serverPages, wholeFailed)
				}
			}
			if st.cause != fsm.NoCause && st.gen.event.Kind == fsm.EvListPage && st.gen.event.Continue != "" && st.after.List.RV == "0" {
				serverPages = true
			}
		}
	})
}

// docs/semantics.md "Relists": items staged one by one as they arrive make up the full state
// exactly once. Followed through a model of a staging store (stage appends, a discard drops
// everything or the last n, replace takes what is staged): no object is staged twice into one
// full state — a page that broke off and is retried brings its items again, and only its own
// items were discarded — and a page's end stages nothing more after its items.
func TestPropertyStreamedItemsFormTheStateOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		var staged []string
		for i, st := range r.steps {
			if st.gen.event.Kind == fsm.EvListPage && st.before.List.PageItems > 0 && st.cause != fsm.NoCause {
				require.False(t, has(st.commands, fsm.CmdStage), "step %d: a streamed page's end staged again", i)
			}
			for _, c := range st.commands {
				switch c.Kind {
				case fsm.CmdStage:
					switch {
					case c.Type != 0: // a watch-list initial event; the model's keys repeat at random
						staged = append(staged, "")
					case c.Key != "": // a LIST item
						staged = append(staged, c.Key)
					default:
						for range max(c.ItemCount, 1) {
							staged = append(staged, "")
						}
					}
				case fsm.CmdDiscardStaged:
					if c.ItemCount == 0 {
						staged = nil
						continue
					}
					require.LessOrEqual(t, c.ItemCount, len(staged), "step %d: discarded more than was staged", i)
					staged = staged[:len(staged)-c.ItemCount]
				case fsm.CmdReplaceStore:
					seen := map[string]bool{}
					for _, k := range staged {
						require.False(t, k != "" && seen[k], "step %d: %s staged twice into one state", i, k)
						seen[k] = true
					}
					staged = nil
				}
			}
		}
	})
}

// docs/semantics.md "behind a load balancer": a 410 from a watch cache younger than the RV is
// answered by a re-watch at the same RV on a fresh connection at most once between two watch
// events; every other 410 in Watching leads to a relist (at once or after a wait), never to a
// re-watch; and only that answer, and the re-watch of a stream that fell silent
// ("silent watch"), ask for a fresh connection, both from the last RV. Where the caller says
// there is one kube-apiserver (SingleServer), a young cache's 410 never asks for one.
func TestPropertyFreshConnectionOnceBetweenEvents(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		fresh := 0
		for i, st := range r.steps {
			if st.gen.event.Kind == fsm.EvWatchEvent && st.cause == fsm.CauseWatchEvent {
				fresh = 0
			}
			for _, c := range st.commands {
				if c.Kind != fsm.CmdOpenWatch || !c.FreshConnection {
					continue
				}
				if st.cause != fsm.CauseExpiredYoungCache && st.cause != fsm.CauseWatchSilent {
					t.Fatalf("step %d: %s asked for a fresh connection", i, st.cause)
				}
				if c.ResourceVersion != st.before.LastRV {
					t.Fatalf("step %d: fresh re-watch at %q, last RV %q", i, c.ResourceVersion, st.before.LastRV)
				}
				if st.cause == fsm.CauseExpiredYoungCache {
					if r.m.Config().SingleServer {
						t.Fatalf("step %d: a fresh-connection re-watch for a young cache with one kube-apiserver", i)
					}
					fresh++
				}
			}
			if fresh > 1 {
				t.Fatalf("step %d: a second fresh-connection re-watch with no watch event between", i)
			}
			if st.before.State == fsm.Watching && st.gen.kind == fkExpired && !st.gen.stale && st.cause != fsm.CauseExpiredYoungCache &&
				!transitions.Table.Facts(st.cause).HoldsRelist && // a relist held back begins later
				st.after.State != fsm.Relisting && (st.after.State != fsm.Backoff || st.after.Wait.Next != fsm.Relisting) {
				t.Fatalf("step %d: %s led to %s, not a relist", i, st.cause, st.after.State)
			}
		}
	})
}

// docs/semantics.md "credentials expired": the caller is asked to refresh its credentials only
// when it said it can, only for a 401 — to a watch once the store synced, or to a listing — and
// at most once a minute; its answer, whatever it is, sends the refused request again at once:
// a watch re-opens from the last RV, no LIST; a listing lists again, no wait.
func TestPropertyCredentialsRefreshedAtMostOnceAMinute(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		var last time.Time
		for i, st := range r.steps {
			e := st.gen.event
			for _, c := range st.commands {
				if c.Kind != fsm.CmdAsk || c.Hook != fsm.HookRefreshCredentials {
					continue
				}
				require.True(t, r.m.Config().CredentialsRefresh, "step %d: asked a caller without the hook", i)
				listing := st.before.State == fsm.Listing || st.before.State == fsm.Relisting
				require.True(t, st.before.Synced || listing, "step %d: a watch's 401 asked before the store synced", i)
				f := e.Failure
				require.True(t, f != nil && (f.Code == 401 || f.Status != nil && f.Status.Code == 401), "step %d: asked for %s", i, e)
				if !last.IsZero() {
					require.GreaterOrEqual(t, e.Now.Sub(last), time.Minute, "step %d: asked again within a minute", i)
				}
				last = e.Now
			}
			if st.cause == fsm.CauseCredentialsRefreshed {
				watches, lists := 0, 0
				for _, c := range st.commands {
					require.NotEqual(t, fsm.CmdArmTimer, c.Kind, "step %d: %v", i, st.commands)
					switch c.Kind {
					case fsm.CmdOpenWatch:
						watches++
						if !c.SendInitialEvents {
							require.Equal(t, st.before.LastRV, c.ResourceVersion, "step %d: re-watch from the last RV", i)
						}
					case fsm.CmdListPage:
						lists++
					}
				}
				if st.before.State == fsm.Watching {
					require.Equal(t, 1, watches, "step %d: one re-watch at once: %v", i, st.commands)
					require.Zero(t, lists, "step %d: %v", i, st.commands)
				} else {
					require.Equal(t, 1, watches+lists, "step %d: the listing again at once: %v", i, st.commands)
				}
			}
		}
	})
}

// docs/semantics.md "Relists": with MaxRelists set, no more relists begin within any 10
// minutes than it allows, whatever the server answers.
func TestPropertyRelistCapHolds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		limit := r.m.Config().MaxRelists
		if limit == 0 {
			return
		}
		var began []time.Time
		for i, st := range r.steps {
			if st.after.Relists.Count == st.before.Relists.Count {
				continue
			}
			now := st.gen.event.Now
			began = append(began, now)
			in := 0
			for _, b := range began {
				if now.Sub(b) < 10*time.Minute {
					in++
				}
			}
			require.LessOrEqual(t, in, limit, "step %d: %d relists began within 10 minutes, MaxRelists %d", i, in, limit)
		}
	})
}

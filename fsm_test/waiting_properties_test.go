package fsm_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// failingWatch drives a machine that has listed at t0 through watch failures that never make
// progress. Each request fails after a drawn latency; each timer fires when it is due. It
// reports every request the machine makes, with its time.
type failingWatch struct {
	m        *transitions.Machine
	s        fsm.Snapshot
	now      time.Time
	requests []time.Time
}

func newFailingWatch(t *rapid.T, cfg transitions.Config) *failingWatch {
	f := &failingWatch{m: transitions.MustNew(cfg), now: t0}
	f.s = f.m.Initial()
	f.step(fsm.Event{Kind: fsm.EvStart})
	f.step(fsm.Event{Kind: fsm.EvListPage, Request: f.s.Request, ResourceVersion: "10"})
	return f
}

// step applies e, and answers at once a question the machine asks its caller, as a caller that
// gives its hook's first answer (fsm.Hook.Examples): it returns the commands of both.
func (f *failingWatch) step(e fsm.Event) []fsm.Command {
	e.Now = f.now
	var cmds []fsm.Command
	f.s, cmds = f.m.Next(f.s, e)
	for _, c := range cmds {
		switch c.Kind {
		case fsm.CmdListPage, fsm.CmdOpenWatch:
			f.requests = append(f.requests, f.now)
		case fsm.CmdAsk:
			answer := fsm.Event{Kind: fsm.EvAnswer, Request: c.Request, Hook: c.Hook}
			if c.Hook.Answers() {
				answer.Answer, _ = c.Hook.ParseAnswer(c.Hook.Examples()[0])
			}
			return append(cmds, f.step(answer)...)
		}
	}
	return cmds
}

// fail answers the request in flight with failure after latency, then waits out the timer the
// machine arms, if any. It returns the commands of the failure.
func (f *failingWatch) fail(latency time.Duration, kind fsm.EventKind, failure *fsm.Failure) []fsm.Command {
	f.now = f.now.Add(latency)
	cmds := f.step(fsm.Event{Kind: kind, Request: f.s.Request, Failure: failure})
	for _, c := range cmds {
		if c.Kind == fsm.CmdArmTimer {
			f.now = f.now.Add(c.Delay)
			f.step(fsm.Event{Kind: fsm.EvTimerFired, Timer: c.Timer})
		}
	}
	return cmds
}

// docs/semantics.md InternalError row: with no progress, a streak of InternalErrors relists at
// the first error that finds the streak both InternalErrorWindow old and InternalErrorRewatches
// re-watches long — never earlier, never later — however long the waits between errors are
// (a server's Retry-After of 90 s included) and whatever other failures come between them.
func TestPropertyInternalErrorStreakRelistsOnceBounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := drawConfig(t)
		cfg.WatchList = false
		f := newFailingWatch(t, cfg)
		window, rewatches := f.m.Config().InternalErrorWindow, f.m.Config().InternalErrorRewatches
		var streakStart time.Time
		watchesSinceStart := 0
		for i := range rapid.IntRange(1, 60).Draw(t, "failures") {
			latency := rapid.SampledFrom([]time.Duration{0, 50 * time.Millisecond, 2 * time.Second, 20 * time.Second}).Draw(t, "latency")
			kind := rapid.SampledFrom([]fsm.EventKind{fsm.EvWatchOpenFailed, fsm.EvWatchError, fsm.EvWatchEnded}).Draw(t, "kind")
			var failure *fsm.Failure
			internal := rapid.IntRange(0, 3).Draw(t, "internal") > 0
			switch {
			case internal && kind == fsm.EvWatchEnded:
				failure = &fsm.Failure{Transport: fsm.Decode}
			case internal:
				failure = &fsm.Failure{Status: status(500, "InternalError")}
				if secs := rapid.SampledFrom([]int32{0, 2, 90}).Draw(t, "retryAfter"); secs > 0 {
					failure.Status.Details = detailsRetryAfter(secs)
				}
			case kind == fsm.EvWatchEnded:
				failure = &fsm.Failure{Transport: fsm.Reset}
			default:
				kind, failure = fsm.EvWatchOpenFailed, &fsm.Failure{Status: status(429, "TooManyRequests")}
			}
			before := len(f.requests)
			at := f.now.Add(latency)
			due := internal && !streakStart.IsZero() && at.Sub(streakStart) >= window && watchesSinceStart >= rewatches
			if internal && streakStart.IsZero() {
				streakStart, watchesSinceStart = at, 0
			}
			cmds := f.fail(latency, kind, failure)
			// At once, or once the relist rules let it (a wait that begins a relist: the
			// deferred relist's LIST went out when fail fired its timer).
			relisted := has(cmds, fsm.CmdListPage) || slices.ContainsFunc(cmds, func(c fsm.Command) bool {
				return c.Kind == fsm.CmdArmTimer && transitions.Table.BeginsRelist(c.Reason)
			})
			if relisted != due {
				t.Fatalf("failure %d at +%v (streak since +%v, %d re-watches): relisted=%v, want %v; commands %v",
					i, at.Sub(t0), streakStart.Sub(t0), watchesSinceStart, relisted, due, cmds)
			}
			if relisted {
				// The LIST completes; a completed LIST ends the streak.
				f.step(fsm.Event{Kind: fsm.EvListPage, Request: f.s.Request, ResourceVersion: "10"})
				streakStart, watchesSinceStart = time.Time{}, 0
				continue
			}
			if !streakStart.IsZero() {
				watchesSinceStart += len(f.requests) - before
			}
		}
	})
}

// docs/semantics.md "Waiting", the outage target: with no progress and no Retry-After, the
// reflector asks no more of the server than client-go's reflector would. client-go waits on
// wait.Backoff.DelayWithReset (800 ms ×2, cap 30 s, reset to 800 ms whenever 2 minutes have
// passed since its last reset, whatever happened meanwhile) and, for a 429 on a watch, makes one
// request per wait. Both are run without jitter, with the same latency for the n-th request.
// The resume-RV age guard may put rewatch one request ahead of client-go before client-go's
// first reset; from 3 minutes on, rewatch has made no more requests than client-go at any time.
func TestPropertyOutageRequestsWithinClientGoSchedule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := backoff.Reflector()
		b.Jitter = 0
		f := newFailingWatch(t, transitions.Config{Backoff: b, Seed: 1})
		// The n-th request fails after the same latency for both reflectors; latencies are
		// drawn as either schedule first needs them, so each runs for the whole 10 minutes.
		var latencies []time.Duration
		latency := func(i int) time.Duration {
			for len(latencies) <= i {
				latencies = append(latencies, rapid.SampledFrom([]time.Duration{0, 10 * time.Millisecond, time.Second, 5 * time.Second}).Draw(t, "latency"))
			}
			return latencies[i]
		}
		end := t0.Add(10 * time.Minute)
		for i := 0; f.now.Before(end); i++ {
			failure := rapid.SampledFrom([]*fsm.Failure{
				{Status: status(429, "TooManyRequests")}, {Transport: fsm.Refused}, {Code: 503},
			}).Draw(t, "failure")
			f.fail(latency(i), fsm.EvWatchOpenFailed, failure)
		}
		ours := f.requests[1:] // the first LIST is the same for both
		theirs := clientGoSchedule(b, t0, end, latency)
		for _, at := range append(append([]time.Time{}, ours...), theirs...) {
			if at.Sub(t0) < 3*time.Minute || at.After(end) {
				continue
			}
			if n, m := countUntil(ours, at), countUntil(theirs, at); n > m {
				t.Fatalf("by +%v rewatch made %d requests, client-go %d\nrewatch:   %v\nclient-go: %v",
					at.Sub(t0), n, m, offsets(ours), offsets(theirs))
			}
		}
	})
}

// clientGoSchedule is when client-go's reflector makes its requests until end, after a LIST at
// start, with its i-th watch failing after latency(i).
func clientGoSchedule(b backoff.Backoff, start, end time.Time, latency func(int) time.Duration) []time.Time {
	initial, cur := b, b
	lastReset, now := start, start
	var out []time.Time
	for i := 0; !now.After(end); i++ {
		out = append(out, now) // the watch request
		now = now.Add(latency(i))
		if now.Sub(lastReset) > backoff.ReflectorResetAfter {
			cur, lastReset = initial, now
		}
		now = now.Add(cur.Step(nil))
	}
	return out
}

func countUntil(ts []time.Time, at time.Time) int {
	n := 0
	for _, t := range ts {
		if !t.After(at) {
			n++
		}
	}
	return n
}

func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(t0).Round(100 * time.Millisecond)
	}
	return out
}

// docs/semantics.md "Initial LIST": a continuation page that fails (other than with an expired
// token) keeps the pages staged so far, and the retry after the backoff asks for that same page.
func TestPropertyFailedContinuePageIsRetried(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := drawRun(t)
		pending := ""
		for i, st := range r.steps {
			if st.cause == fsm.CauseListFailed && st.before.List.Continuing && !st.before.List.Streaming {
				for _, c := range st.commands {
					// Only the items of the page that broke off go (docs/semantics.md, "Relists").
					require.False(t, c.Kind == fsm.CmdDiscardStaged && c.ItemCount == 0, "step %d: a failed continue page discarded the staged pages", i)
				}
				pending = st.before.List.Continue
				require.NotEmpty(t, pending, "step %d: a continue page without its token", i)
			}
			if pending == "" || (st.cause != fsm.CauseRetryList && st.cause != fsm.CauseRetryRelist) {
				if st.cause == fsm.CauseStop {
					pending = ""
				}
				continue
			}
			var asked []string
			for _, c := range st.commands {
				if c.Kind == fsm.CmdListPage {
					asked = append(asked, c.Continue)
				}
			}
			require.Equal(t, []string{pending}, asked, "step %d: the retry after a failed continue page", i)
			pending = ""
		}
	})
}

func status(code int32, reason metav1.StatusReason) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Code: code, Reason: reason}
}

func detailsRetryAfter(secs int32) *metav1.StatusDetails {
	return &metav1.StatusDetails{RetryAfterSeconds: secs}
}

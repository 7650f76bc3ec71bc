package transitions

import (
	"math"
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// backoff arms the timer of a row into Backoff, for d (the row's delay, or for a row that
// begins a relist what beginRelist makes of it). Where the wait leads is the row's Then, kept
// as Snapshot.Next, through which the timer's row is found when it fires.
func (m *Machine) backoff(s *fsm.Snapshot, row fsm.Transition, d time.Duration, out *[]fsm.Command) {
	s.Wait.Next = row.Then
	s.Wait.Timer = m.nextID(s)
	emit(out, fsm.Command{Kind: fsm.CmdArmTimer, Timer: s.Wait.Timer, Delay: d, Reason: row.Cause})
}

// delay is the wait before the retry that leads to next (docs/semantics.md, "Waiting").
//
// A usable Retry-After is honoured, capped, and leaves the backoff where it was: the server
// said when to come back, and coming back then is no failure streak. Otherwise the policy's
// next step is taken and the backoff advances. A re-watch is cut short while its resume RV is
// young, because waiting past the server's watch-cache window would turn a cheap resume into
// a 410 and a full LIST. No wait is shorter than MinWait.
func (m *Machine) delay(s *fsm.Snapshot, e *fsm.Event, next fsm.State) time.Duration {
	if ra, ok := retryAfter(e.Failure); ok && ra >= MinRetryAfter {
		// The cap is validated to be at least MinWait; the floor holds here all the same.
		return max(m.retryAfterWait(s, e, next, min(ra, m.cfg.RetryAfterCap)), MinWait)
	}
	d := m.step(s)
	if next == fsm.Watching {
		d = m.guardResumeRV(s, e, d)
	}
	return max(d, MinWait)
}

// step is the backoff policy's next wait; the backoff advances.
func (m *Machine) step(s *fsm.Snapshot) time.Duration { return m.stepAt(s, s.Wait.Attempt) }

// stepAt is the backoff policy's wait for attempt; the backoff advances from where it was. A
// wait of the backoff's own is a failure without a usable Retry-After: the next Retry-After is
// a first one again (docs/semantics.md, "a repeated Retry-After").
func (m *Machine) stepAt(s *fsm.Snapshot, attempt int) time.Duration {
	d := m.cfg.Backoff.Delay(attempt, m.rand(s))
	if s.Wait.Attempt < math.MaxInt32 {
		s.Wait.Attempt++
	}
	s.RetryAfter.Repeats = 0
	return d
}

// firstRefusalDelay is the wait before the re-watch that answers the first refusal since a
// watch was last accepted: a usable Retry-After as always, otherwise the backoff's first step
// (it advances all the same, so a refusal that lasts meets the grown backoff on its relist).
// The refusal is an answer: the server is there again, and what grew the backoff — a restart's
// refused connections and proxy errors — says nothing of how long its authorizer takes to
// sync (docs/semantics.md, "watch refused").
func (m *Machine) firstRefusalDelay(s *fsm.Snapshot, e fsm.Event) time.Duration {
	if ra, ok := retryAfter(e.Failure); ok && ra >= MinRetryAfter {
		return m.delay(s, &e, fsm.Watching)
	}
	return max(m.guardResumeRV(s, &e, m.stepAt(s, 0)), MinWait)
}

// listRefusalDelay is the wait before a LIST refused with a client error is asked again. The
// first refusal since a watch was last accepted or a listing completed waits like the first
// refused watch (firstRefusalDelay): a relist that began because the one kube-apiserver was
// unreachable (server-unreachable) meets the restarted server's authorizer as a re-watch
// does. It marks the refusal (Snapshot.Watch.Rejected), so the next waits the usual delay.
func (m *Machine) listRefusalDelay(s *fsm.Snapshot, e fsm.Event) time.Duration {
	first := rejected.count(s) == 0
	rejected.add(s)
	if ra, ok := retryAfter(e.Failure); !first || ok && ra >= MinRetryAfter {
		return m.delay(s, &e, s.State)
	}
	return max(m.stepAt(s, 0), MinWait)
}

// lagDelay is the wait before the relist that answers "too large resource version" on a
// re-watch: the backoff's next step, never shorter than the server's Retry-After. The RV came
// from the server itself (the LIST that began the watch), so the answer means a watch cache
// lagging etcd; its hint is a fixed second (kube-apiserver's watch cache always says 1), not a
// measure of the lag, and a lag that outlasts it answers every round alike. So unlike other
// hints it advances the backoff: a lasting lag costs a consistent LIST per backoff step, up to
// the cap, not one per second (docs/semantics.md, "too large resource version").
func (m *Machine) lagDelay(s *fsm.Snapshot, e *fsm.Event) time.Duration {
	d := m.step(s)
	if ra, ok := retryAfter(e.Failure); ok && ra >= MinRetryAfter {
		d = max(d, min(ra, m.cfg.RetryAfterCap))
	}
	return max(d, MinWait)
}

// retryAfterWait is the wait for an honoured Retry-After ra. The first one since the server
// last accepted a request, or since the backoff last waited on its own, is waited exactly. A
// second in a row means the server turned this client away again right after the wait it
// asked for: clients that a server rejects together
// (API Priority and Fairness gives them all one value) and that wait exactly come back
// together and are rejected together again, so from the second on the wait is spread over
// [ra, ra × (1 + RetryAfterSpread)) from the seeded jitter source (docs/semantics.md, "a
// repeated Retry-After"). The spread never shortens the server's wait, never takes the wait
// past RetryAfterCap, and for a re-watch never past the resume RV's lifetime.
func (m *Machine) retryAfterWait(s *fsm.Snapshot, e *fsm.Event, next fsm.State, ra time.Duration) time.Duration {
	repeated := s.RetryAfter.Repeats > 0
	if s.RetryAfter.Repeats < math.MaxInt32 {
		s.RetryAfter.Repeats++
	}
	if !repeated || m.cfg.RetryAfterSpread <= 0 {
		return ra
	}
	// ra is already capped, so the cap bounds only the spread.
	d := min(ra+time.Duration(float64(ra)*m.cfg.RetryAfterSpread*m.rand(s)), m.cfg.RetryAfterCap)
	if next == fsm.Watching {
		d = max(ra, m.guardResumeRV(s, e, d))
	}
	return d
}

// guardResumeRV cuts a re-watch's wait while the resume RV is young (docs/semantics.md,
// "resume-RV age guard").
func (m *Machine) guardResumeRV(s *fsm.Snapshot, e *fsm.Event, d time.Duration) time.Duration {
	if age := e.Now.Sub(s.RVAdvancedAt); age < m.cfg.ResumeRVLifetime {
		return min(d, max(MinResumeWait, m.cfg.ResumeRVLifetime-age))
	}
	return d
}

// accepted notes that the server took a request (a LIST page, an opened watch): a Retry-After
// after it is a new rejection, not a repeat.
func accepted(s *fsm.Snapshot) { s.RetryAfter.Repeats = 0 }

// progress is a watch moving the last observed RV (docs/semantics.md, "reset on progress"):
// proof that the server serves this watch again, so the backoff starts from its first step,
// and a moment that ends streaks (fsm.AtProgress: an InternalError streak is over).
func progress(s *fsm.Snapshot, e *fsm.Event) {
	s.LastRV, s.RVUnusable, s.RVAdvancedAt = e.ResourceVersion, false, e.Now
	s.Wait.Attempt = 0
	s.Moments.Progress++
}

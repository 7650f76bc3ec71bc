package transitions

import (
	"math"
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// backoff arms the timer of a row into Backoff. Where the wait leads is the row's Then, kept
// as Snapshot.Next, through which the timer's row is found when it fires.
func (m *Machine) backoff(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition, out *[]fsm.Command) {
	d := m.delay(s, e, row.Then)
	s.Next = row.Then
	s.Timer = m.nextID(s)
	emit(out, fsm.Command{Kind: fsm.CmdArmTimer, Timer: s.Timer, Delay: d, Reason: row.Cause})
}

// delay is the wait before the retry that leads to next (docs/semantics.md, "Waiting").
//
// A usable Retry-After is honoured exactly (or, with RetryAfterSpread, up to that fraction
// later), capped, and leaves the backoff where it was: the server said when to come back, and
// coming back then is no failure streak. Otherwise the policy's next step is taken and the
// backoff advances. A re-watch is cut short while its
// resume RV is young, because waiting past the server's watch-cache window would turn a cheap
// resume into a 410 and a full LIST. No wait is shorter than MinWait.
func (m *Machine) delay(s *fsm.Snapshot, e *fsm.Event, next fsm.State) time.Duration {
	if ra, ok := retryAfter(e.Failure); ok && ra >= MinRetryAfter {
		d := min(ra, m.cfg.RetryAfterCap)
		if m.cfg.RetryAfterSpread > 0 {
			d += time.Duration(float64(d) * m.cfg.RetryAfterSpread * m.rand(s))
		}
		return d
	}
	d := m.cfg.Backoff.Delay(s.Attempt, m.rand(s))
	if s.Attempt < math.MaxInt32 {
		s.Attempt++
	}
	if next == fsm.Watching {
		if age := e.Now.Sub(s.RVAdvancedAt); age < m.cfg.ResumeRVLifetime {
			d = min(d, max(MinResumeWait, m.cfg.ResumeRVLifetime-age))
		}
	}
	return max(d, MinWait)
}

// progress is a watch moving the last observed RV (docs/semantics.md, "reset on progress"):
// proof that the server serves this watch again, so the backoff starts from its first step
// and any InternalError streak is over.
func progress(s *fsm.Snapshot, e *fsm.Event) {
	s.LastRV, s.RVUnusable, s.RVAdvancedAt = e.ResourceVersion, false, e.Now
	s.Attempt = 0
	s.InternalStreakStart, s.InternalRewatches = zeroTime, 0
}

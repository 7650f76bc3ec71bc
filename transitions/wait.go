package transitions

import (
	"math"
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// backoff arms the timer that leads to next after the wait this failure calls for.
func (m *Machine) backoff(s *fsm.Snapshot, e *fsm.Event, cause fsm.Cause, next fsm.State, out *[]fsm.Command) {
	d := m.delay(s, e)
	s.Next = next
	s.Timer = m.nextID(s)
	emit(out, fsm.Command{Kind: fsm.CmdArmTimer, Timer: s.Timer, Delay: d, Reason: cause})
}

// delay is the wait before the next retry: the server's Retry-After, capped, when it gave a
// usable one; otherwise the backoff policy's next step. Either way the backoff advances, so a
// server that stops sending Retry-After is met with a backoff that has kept growing.
func (m *Machine) delay(s *fsm.Snapshot, e *fsm.Event) time.Duration {
	if !s.HealthySince.IsZero() && e.Now.Sub(s.HealthySince) >= m.cfg.BackoffResetAfter {
		s.Attempt = 0
	}
	s.HealthySince = zeroTime
	r := m.rand(s)
	d := m.cfg.Backoff.Delay(s.Attempt, r)
	if ra, ok := retryAfter(e.Failure); ok && ra >= MinRetryAfter {
		d = min(ra, m.cfg.RetryAfterCap)
	}
	if s.Attempt < math.MaxInt32 {
		s.Attempt++
	}
	return max(d, 0)
}

package transitions

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

var zeroTime time.Time

// openWatch re-opens the watch from the last observed resourceVersion.
func (m *Machine) openWatch(s *fsm.Snapshot, out *[]fsm.Command) {
	s.Request = m.nextID(s)
	streamClosed(s)
	if s.InternalErrors.Live(&s.Moments) {
		s.InternalErrors.Rewatches++
	}
	var timeout int64
	if s.Resume.CatchingUp {
		// A restored snapshot waits for a bookmark to be synced: a deadline a few seconds
		// away brings kube-apiserver's (rules_resume.go).
		timeout = min(catchUpWatchTimeout, max(int64(m.cfg.WatchTimeoutMax.Seconds()), 1))
		s.Resume.Timeout = timeout
	} else {
		timeout = m.watchTimeout(s)
	}
	emit(out, fsm.Command{
		Kind: fsm.CmdOpenWatch, Request: s.Request, ResourceVersion: s.LastRV, RVSet: true,
		Bookmarks: true, TimeoutSeconds: timeout, SilenceBound: m.silenceBound(),
	})
}

// silenceBound is the WatchSilence a watch command carries: 0 (never) when it is off.
func (m *Machine) silenceBound() time.Duration { return max(m.cfg.WatchSilence, 0) }

// watchTimeout draws timeoutSeconds uniformly from [WatchTimeoutMin, WatchTimeoutMax), so that
// a fleet of reflectors does not re-watch in lockstep.
func (m *Machine) watchTimeout(s *fsm.Snapshot) int64 {
	lo, hi := m.cfg.WatchTimeoutMin.Seconds(), m.cfg.WatchTimeoutMax.Seconds()
	r := m.rand(s)
	return int64(lo + r*(hi-lo))
}

func (m *Machine) rand(s *fsm.Snapshot) float64 {
	r, next := s.Rand.Next()
	s.Rand = next
	return r
}

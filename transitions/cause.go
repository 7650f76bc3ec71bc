package transitions

import (
	"github.com/rewatch/rewatch/fsm"
)

// cause classifies e in the state of s. It returns fsm.NoCause for events that must be ignored:
// anything after Stopped, and events of a request or timer that is no longer current.
func (m *Machine) cause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	if s.State == fsm.Stopped {
		return fsm.NoCause
	}
	if e.Kind == fsm.EvStop {
		return fsm.CauseStop
	}
	switch s.State {
	case fsm.Listing, fsm.Relisting:
		if e.Kind == fsm.EvStart {
			if s.State == fsm.Listing && s.Seq == 0 {
				return fsm.CauseStart
			}
			return fsm.NoCause
		}
		if !m.current(s, e) {
			return fsm.NoCause
		}
		if s.Streaming {
			return m.streamingListCause(s, e)
		}
		return m.listCause(s, e)
	case fsm.Watching:
		if !m.current(s, e) {
			return fsm.NoCause
		}
		return m.watchCause(s, e)
	case fsm.Backoff:
		if e.Kind != fsm.EvTimerFired || e.Timer != s.Timer || s.Timer == 0 {
			return fsm.NoCause
		}
		switch s.Next {
		case fsm.Watching:
			return fsm.CauseRetryWatch
		case fsm.Relisting:
			return fsm.CauseRetryRelist
		default:
			return fsm.CauseRetryList
		}
	}
	return fsm.NoCause
}

// current reports whether e answers the request in flight.
func (m *Machine) current(s *fsm.Snapshot, e *fsm.Event) bool {
	return s.Request != 0 && e.Request == s.Request
}

func (m *Machine) listCause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	switch e.Kind {
	case fsm.EvListPage:
		if e.Continue != "" {
			return fsm.CauseListPageMore
		}
		return fsm.CauseListComplete
	case fsm.EvListFailed:
		switch classify(e.Failure) {
		case classExpired, classTooLargeRV:
			// client-go's pager: an expired continue token falls back to one full list at the
			// original RV; an expired or too-large first page retries as a consistent read.
			if s.ListContinuing {
				return fsm.CauseContinueExpired
			}
			if m.listRV(s) != "" {
				return fsm.CauseListExpired
			}
		case classRejected:
			// A misspelt resource or a bad selector: retried like any failure, but a cause of
			// its own so that it is logged as a warning (docs/semantics.md, "LIST fails: 401 /
			// 403 / 404 / other").
			return fsm.CauseListRejected
		}
		return fsm.CauseListFailed
	}
	return fsm.NoCause
}

func (m *Machine) streamingListCause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	switch e.Kind {
	case fsm.EvWatchOpened:
		return fsm.CauseWatchListOpened
	case fsm.EvWatchEvent:
		if e.Type == fsm.Bookmark && e.InitialEventsEnd {
			return fsm.CauseInitialEventsEnd
		}
		return fsm.CauseInitialEvent
	case fsm.EvWatchOpenFailed:
		switch classify(e.Failure) {
		case classRejected:
			// A server without watch-list answers 400 Invalid (or 403/404 through some proxies):
			// fall back to LIST for good, as client-go does.
			return fsm.CauseWatchListUnsupported
		case classExpired, classTooLargeRV:
			if m.listRV(s) != "" {
				return fsm.CauseListExpired
			}
		}
		return fsm.CauseListFailed
	case fsm.EvWatchError:
		if c := classify(e.Failure); (c == classExpired || c == classTooLargeRV) && m.listRV(s) != "" {
			return fsm.CauseListExpired
		}
		return fsm.CauseInitialTransferCut
	case fsm.EvWatchEnded:
		return fsm.CauseInitialTransferCut
	}
	return fsm.NoCause
}

func (m *Machine) watchCause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	switch e.Kind {
	case fsm.EvWatchOpened:
		return fsm.CauseWatchOpened
	case fsm.EvWatchEvent:
		return fsm.CauseWatchEvent
	case fsm.EvWatchOpenFailed, fsm.EvWatchError:
		return m.watchFailureCause(s, e, classify(e.Failure))
	case fsm.EvWatchEnded:
		if e.Failure != nil && e.Failure.Transport == fsm.Decode {
			return m.watchFailureCause(s, e, classInternal)
		}
		if m.quickEnd(s, e) && s.QuickEnds+1 >= m.cfg.QuickEndsBeforeBackoff {
			return fsm.CauseStreamEndedQuickly
		}
		return fsm.CauseStreamEnded
	}
	return fsm.NoCause
}

func (m *Machine) watchFailureCause(s *fsm.Snapshot, e *fsm.Event, c class) fsm.Cause {
	switch c {
	case classBusy:
		return fsm.CauseTooManyRequests
	case classInternal:
		if m.internalStreakSpent(s, e) {
			return fsm.CauseInternalErrorPastWindow
		}
		return fsm.CauseInternalErrorInWindow
	case classExpired:
		if s.ExpiredStreak > 0 {
			return fsm.CauseExpiredAgain
		}
		return fsm.CauseExpired
	case classTooLargeRV:
		return fsm.CauseTooLargeRV
	case classTransport:
		return fsm.CauseConnectFailed
	}
	return fsm.CauseWatchRejected
}

// quickEnd: the watch ended within QuickWatch of opening, having delivered nothing.
func (m *Machine) quickEnd(s *fsm.Snapshot, e *fsm.Event) bool {
	return s.WatchEvents == 0 && (!s.WatchOpen || e.Now.Sub(s.WatchOpenedAt) < m.cfg.QuickWatch)
}

// internalStreakSpent: the InternalError at e.Now ends a streak that is both old enough and
// has re-watched often enough (docs/semantics.md, InternalError row). Requiring both means a
// streak of long waits still reaches its relist after a few re-watches, and a burst of fast
// errors cannot force one before the window has passed.
func (m *Machine) internalStreakSpent(s *fsm.Snapshot, e *fsm.Event) bool {
	return !s.InternalStreakStart.IsZero() &&
		e.Now.Sub(s.InternalStreakStart) >= m.cfg.InternalErrorWindow &&
		s.InternalRewatches >= m.cfg.InternalErrorRewatches
}

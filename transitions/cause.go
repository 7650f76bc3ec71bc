package transitions

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/fsm"
)

// cause reads e as a cause: what the event means for the snapshot's request or timer. Whether
// the current state admits that cause is not decided here but by fsm.Table alone (Step looks
// the row up and ignores the event when there is none), so a cause may come out that the state
// does not permit — a LIST page in Watching, a stop in Stopped — and that event is ignored.
//
// The reading depends on what is in flight, not on the state's name: a LIST, a watch-list
// stream (Streaming) or a watch. fsm.NoCause means the event answers nothing current: a stale
// request or timer, a second start.
func (m *Machine) cause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	switch e.Kind {
	case fsm.EvStop:
		return fsm.CauseStop
	case fsm.EvStart:
		if s.Seq == 0 { // nothing requested yet
			return fsm.CauseStart
		}
		return fsm.NoCause
	case fsm.EvTimerFired:
		if t := s.Watch.Silence.Timer; t != 0 && e.Timer == t {
			return m.silenceCause(s, e)
		}
		if s.Wait.Timer == 0 || e.Timer != s.Wait.Timer {
			return fsm.NoCause
		}
		// The timer row is the one the table has into the state the wait leads to.
		c, _ := fsm.Resume(s.Wait.Next)
		return c
	}
	if !m.current(s, e) {
		return fsm.NoCause
	}
	if s.List.Streaming {
		return m.streamingListCause(s, e)
	}
	switch e.Kind {
	case fsm.EvListItem, fsm.EvListPage, fsm.EvListFailed:
		return m.listCause(s, e)
	}
	return m.watchCause(s, e)
}

// current reports whether e answers the request in flight.
func (m *Machine) current(s *fsm.Snapshot, e *fsm.Event) bool {
	return s.Request != 0 && e.Request == s.Request
}

func (m *Machine) listCause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	switch e.Kind {
	case fsm.EvListItem:
		return fsm.CauseListItem
	case fsm.EvListPage:
		if e.Continue != "" {
			return fsm.CauseListPageMore
		}
		return fsm.CauseListComplete
	case fsm.EvListFailed:
		if m.wholeListRefused(s, e.Failure) {
			return fsm.CauseWholeListRefused
		}
		if m.pageTooLarge(s, e.Failure) {
			return fsm.CausePageTooLarge
		}
		switch classify(e.Failure) {
		case fsm.ClassExpired, fsm.ClassTooLargeRV:
			// client-go's pager: an expired continue token falls back to one full list at the
			// original RV; an expired or too-large first page retries as a consistent read.
			// Once whole lists fail there is no full list to fall back to: the pages start
			// again from page 1, after the wait of a failed LIST (docs/semantics.md, "A list
			// that cannot be served whole").
			if s.List.Continuing {
				if s.Server.WholeListsFail {
					return fsm.CauseListFailed
				}
				return fsm.CauseContinueExpired
			}
			if s.List.RV != "" {
				return fsm.CauseListExpired
			}
		case fsm.ClassRejected:
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
		case fsm.ClassRejected:
			// A server without watch-list answers 400 Invalid (or 403/404 through some proxies):
			// fall back to LIST for good, as client-go does.
			return fsm.CauseWatchListUnsupported
		case fsm.ClassExpired, fsm.ClassTooLargeRV:
			if s.List.RV != "" {
				return fsm.CauseListExpired
			}
		}
		return fsm.CauseListFailed
	case fsm.EvWatchError:
		if c := classify(e.Failure); (c == fsm.ClassExpired || c == fsm.ClassTooLargeRV) && s.List.RV != "" {
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
			return m.watchFailureCause(s, e, fsm.ClassInternal)
		}
		if m.quickEnd(s, e) && s.Watch.QuickEnds+1 >= m.cfg.QuickEndsBeforeBackoff {
			return fsm.CauseStreamEndedQuickly
		}
		return fsm.CauseStreamEnded
	}
	return fsm.NoCause
}

func (m *Machine) watchFailureCause(s *fsm.Snapshot, e *fsm.Event, c fsm.Class) fsm.Cause {
	switch c {
	case fsm.ClassBusy:
		return fsm.CauseServerBusy
	case fsm.ClassInternal:
		if storageReadError(e.Failure) || m.internalStreakSpent(s, e) {
			return fsm.CauseInternalErrorPastWindow
		}
		return fsm.CauseInternalErrorInWindow
	case fsm.ClassExpired:
		if s.Watch.ExpiredStreak > 0 {
			return fsm.CauseExpiredAgain
		}
		if m.youngCache(s, e) {
			return fsm.CauseExpiredYoungCache
		}
		return fsm.CauseExpired
	case fsm.ClassTooLargeRV:
		return fsm.CauseTooLargeRV
	case fsm.ClassTransport:
		return fsm.CauseConnectFailed
	}
	if !s.Watch.Rejected {
		return fsm.CauseWatchRejectedOnce
	}
	return fsm.CauseWatchRejected
}

// unusableRV: the failure says the request's resourceVersion (or its continue token's) cannot
// be served — expired, or too large.
func unusableRV(f *fsm.Failure) bool {
	c := classify(f)
	return c == fsm.ClassExpired || c == fsm.ClassTooLargeRV
}

// storageReadError: a 500 whose reason is StorageReadError — the server could not read an
// object from etcd (undecryptable, corrupt), and such an object's deletion
// (ignoreStoreReadErrorWithClusterBreakingPotential, KEP-3926) ends watches so. Waiting it out
// would keep the deleted object in the store for good, since the watch resumes after the delete:
// the streak's window does not apply, the reflector relists at once, as client-go's does (it
// retries only reason InternalError; docs/semantics.md, "500 InternalError" row).
func storageReadError(f *fsm.Failure) bool {
	return f != nil && f.Status != nil && f.Status.Reason == metav1.StatusReasonStoreReadError
}

// youngCache: the 410 answers a resume before the watch delivered anything, its Status says a
// watch cache whose oldest event is newer than the RV asked for (kube-apiserver's "too old
// resource version: RV (OLDEST)"), the resume RV is younger than ResumeRVLifetime, and no fresh
// connection has been tried since the last watch event. Another kube-apiserver behind the same
// load balancer, with an older cache, can serve the resume; etcd's own 410 (compaction) says no
// such thing, since every kube-apiserver would answer it alike.
//
// The RV's age is what tells a young cache from an old one: a long-running kube-apiserver's watch
// cache keeps every event at least 75 s, so it answers an RV with these words only once the
// reflector reached that RV more than 75 s ago — an ordinary 410, which would only cost an extra
// WATCH before the relist. An RV reached less than ResumeRVLifetime (60 s) ago that a cache no
// longer holds is one its cache started after (docs/semantics.md, "behind a load balancer").
func (m *Machine) youngCache(s *fsm.Snapshot, e *fsm.Event) bool {
	if s.Watch.FreshTried || s.Watch.Events > 0 || e.Failure == nil ||
		e.Now.Sub(s.RVAdvancedAt) >= m.cfg.ResumeRVLifetime {
		return false
	}
	asked, oldest, ok := e.Failure.WatchCacheTooOld()
	return ok && oldest > asked && strconv.FormatUint(asked, 10) == s.LastRV
}

// quickEnd: the watch ended within QuickWatch of opening without moving the RV. A bookmark
// that repeats the RV the watch opened at is nothing delivered: a server that answers every
// watch with one and then ends it would otherwise be re-watched at once, forever
// (docs/semantics.md, "watch stream ends").
func (m *Machine) quickEnd(s *fsm.Snapshot, e *fsm.Event) bool {
	return !s.Watch.Progressed && (!s.Watch.Open || e.Now.Sub(s.Watch.OpenedAt) < m.cfg.QuickWatch)
}

// internalStreakSpent: the InternalError at e.Now ends a streak that is both old enough and
// has re-watched often enough (docs/semantics.md, InternalError row). Requiring both means a
// streak of long waits still reaches its relist after a few re-watches, and a burst of fast
// errors cannot force one before the window has passed.
func (m *Machine) internalStreakSpent(s *fsm.Snapshot, e *fsm.Event) bool {
	return !s.InternalErrors.Start.IsZero() &&
		e.Now.Sub(s.InternalErrors.Start) >= m.cfg.InternalErrorWindow &&
		s.InternalErrors.Rewatches >= m.cfg.InternalErrorRewatches
}

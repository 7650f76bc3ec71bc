package transitions

import (
	"github.com/rewatch/rewatch/fsm"
)

// effects updates s and emits the commands of the table row the event takes. s.State is still
// the state the event arrived in.
func (m *Machine) effects(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition, out *[]fsm.Command) {
	switch row.Cause {
	case fsm.CauseWatchEvent:
		m.watchEvent(s, e, out)
	case fsm.CauseWatchOpened, fsm.CauseWatchListOpened:
		s.WatchOpen, s.WatchOpenedAt = true, e.Now
		accepted(s)

	case fsm.CauseStart:
		m.startListing(s, out)
	case fsm.CauseListPageMore:
		accepted(s)
		s.ServerPages = true
		stagePage(s, e, out)
		m.listPage(s, out, pageContinue, e.Continue)
	case fsm.CauseListComplete:
		accepted(s)
		stagePage(s, e, out)
		m.replaceAndWatch(s, e.ResourceVersion, e.Now, out)
	case fsm.CauseListExpired:
		m.endRequest(s, e, out)
		discardStaged(s, out)
		s.RVUnusable = true
		m.startListing(s, out)
	case fsm.CauseContinueExpired:
		discardStaged(s, out)
		m.listPage(s, out, pageFull, "")
	case fsm.CauseListFailed, fsm.CauseListRejected, fsm.CauseInitialTransferCut:
		resumable := s.ListContinuing && !s.Streaming
		m.endRequest(s, e, out)
		if !resumable {
			// A first page or a watch-list stream has nothing to resume from.
			discardStaged(s, out)
			s.ListContinue = ""
		}
		m.backoff(s, e, row, out)
	case fsm.CauseInitialEvent:
		accepted(s)
		if e.Type != fsm.Bookmark {
			s.Staged++
			emit(out, fsm.Command{Kind: fsm.CmdStage, Type: e.Type, Key: e.Key, Object: e.Object, Items: e.Items, ItemCount: e.ItemCount})
		}
	case fsm.CauseInitialEventsEnd:
		// The stream that delivered the initial state goes on as the watch.
		m.replace(s, e.ResourceVersion, e.Now, out)
		s.WatchOpen, s.WatchOpenedAt, s.WatchEvents = true, e.Now, 0
	case fsm.CauseWatchListUnsupported:
		discardStaged(s, out)
		s.WatchListUnsupported = true
		m.startListing(s, out)

	case fsm.CauseTooManyRequests, fsm.CauseConnectFailed, fsm.CauseStreamEndedQuickly:
		m.watchFailed(s, e, out)
		m.backoff(s, e, row, out)
	case fsm.CauseInternalErrorInWindow:
		m.noteInternalError(s, e)
		m.watchFailed(s, e, out)
		m.backoff(s, e, row, out)
	case fsm.CauseInternalErrorPastWindow:
		// The streak is spent: relist. The completed LIST ends the streak, so a lasting outage
		// costs one LIST per window, not one per error.
		m.watchFailed(s, e, out)
		m.startListing(s, out)
	case fsm.CauseStreamEnded:
		m.watchFailed(s, e, out)
		m.openWatch(s, out)
	case fsm.CauseExpired:
		s.ExpiredStreak++
		m.watchFailed(s, e, out)
		m.startListing(s, out)
	case fsm.CauseExpiredAgain:
		s.ExpiredStreak++
		m.watchFailed(s, e, out)
		m.backoff(s, e, row, out)
	case fsm.CauseTooLargeRV:
		s.RVUnusable = true
		m.watchFailed(s, e, out)
		m.startListing(s, out)
	case fsm.CauseWatchRejected:
		m.watchFailed(s, e, out)
		m.backoff(s, e, row, out)

	case fsm.CauseRetryWatch:
		s.Timer = 0
		m.openWatch(s, out)
	case fsm.CauseRetryRelist, fsm.CauseRetryList:
		s.Timer = 0
		if s.ListContinue != "" {
			m.listPage(s, out, pageContinue, s.ListContinue)
		} else {
			m.startListing(s, out)
		}

	case fsm.CauseStop:
		m.stop(s, out)
	}
}

// watchEvent is the hot path: one ADDED/MODIFIED/DELETED/BOOKMARK frame on an open watch.
func (m *Machine) watchEvent(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if !s.WatchOpen {
		// A frame proves the stream is open even if the driver reported no headers event.
		s.WatchOpen, s.WatchOpenedAt = true, e.Now
		accepted(s)
	}
	if e.ResourceVersion != "" && e.ResourceVersion != s.LastRV {
		progress(s, e)
	}
	s.WatchEvents++
	s.QuickEnds, s.ExpiredStreak = 0, 0
	if e.Type != fsm.Bookmark {
		emit(out, fsm.Command{Kind: fsm.CmdApply, Type: e.Type, Key: e.Key, ResourceVersion: e.ResourceVersion, Object: e.Object})
	}
}

// watchFailed closes the books on the current watch. A watch that stayed open past the
// quick-end threshold breaks a streak of quick ends even if it delivered nothing: a quiet
// resource is not a failing server.
func (m *Machine) watchFailed(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if m.quickEnd(s, e) {
		s.QuickEnds++
	} else {
		s.QuickEnds = 0
	}
	m.endRequest(s, e, out)
}

// endRequest forgets the request in flight. An ERROR frame arrives on a stream that may still
// be open, so the driver is told to close it.
func (m *Machine) endRequest(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if e.Kind == fsm.EvWatchError && s.Request != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelRequest, Request: s.Request})
	}
	s.Request = 0
	s.WatchOpen, s.WatchOpenedAt, s.WatchEvents = false, zeroTime, 0
}

// noteInternalError starts a streak at its first error. Later errors do not move the start:
// time spent waiting between them is part of the streak's age, never a reason to forget it.
func (m *Machine) noteInternalError(s *fsm.Snapshot, e *fsm.Event) {
	if s.InternalStreakStart.IsZero() {
		s.InternalStreakStart, s.InternalRewatches = e.Now, 0
	}
}

func (m *Machine) stop(s *fsm.Snapshot, out *[]fsm.Command) {
	if s.Request != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelRequest, Request: s.Request})
		s.Request = 0
	}
	discardStaged(s, out)
	s.ListContinue = ""
	if s.Timer != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelTimer, Timer: s.Timer})
		s.Timer = 0
	}
	s.WatchOpen, s.WatchOpenedAt, s.WatchEvents = false, zeroTime, 0
	emit(out, fsm.Command{Kind: fsm.CmdStopped})
}

func (m *Machine) nextID(s *fsm.Snapshot) uint64 {
	s.Seq++
	return s.Seq
}

package transitions

import (
	"github.com/rewatch/rewatch/fsm"
)

// effects updates s and emits the commands of the table row the event takes, for the cause the
// event was read as: the row's own cause, or, for a relist the relist rules held back (the
// row's cause is then fsm.CauseRelistDeferred), the watch failure that began it. s.State and
// s.Cause are still those the event arrived in.
//
// What the cause's declaration says (fsm.CauseInfo) and what the row says are applied here for
// every cause alike: a cause the server accepted a request with resets the Retry-After run; a
// row that begins a relist goes through beginRelist, and any other row into Backoff arms its
// timer, after the cause's own effects. The switch holds only what is particular to one cause.
func (m *Machine) effects(s *fsm.Snapshot, e *fsm.Event, cause fsm.Cause, row fsm.Transition, out *[]fsm.Command) {
	if cause.Accepted() {
		accepted(s)
	}
	switch cause {
	case fsm.CauseWatchEvent:
		m.watchEvent(s, e, out)
	case fsm.CauseWatchOpened, fsm.CauseWatchListOpened:
		streamOpened(s, e)
	case fsm.CauseSilenceCheck:
		s.Watch.Silence.Timer = 0 // keepDeadline arms the next
	case fsm.CauseWatchSilent:
		m.watchSilent(s, out)

	case fsm.CauseStart:
		m.startListing(s, out)
	case fsm.CauseListItem:
		stageItem(s, e, out)
	case fsm.CauseListPageMore:
		pageAnswered(s)
		stagePage(s, e, out)
		m.listPage(s, out, pageContinue, e.Continue)
	case fsm.CauseListComplete:
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
	case fsm.CausePageTooLarge:
		m.shrinkPage(s, e, out)
	case fsm.CauseWholeListRefused:
		// Asking for the same whole list again at every backoff step would fail the same way:
		// page from now on, at once (docs/semantics.md, "A list that cannot be served whole").
		m.endRequest(s, e, out)
		discardStaged(s, out)
		s.Server.WholeListsFail = true
		m.startListing(s, out)
	case fsm.CauseListFailed, fsm.CauseListRejected, fsm.CauseInitialTransferCut:
		// A continuation page the server refused (400: a token it cannot read) is not retried:
		// the same token would be refused forever. The listing starts again from page 1 after
		// the wait, as client-go's does (docs/semantics.md, "Initial LIST").
		// Nor is a token the server said has expired (when whole lists fail, so that no full
		// list can replace the pages: listCause).
		resumable := s.List.Continuing && !s.List.Streaming && row.Cause != fsm.CauseListRejected &&
			!unusableRV(e.Failure)
		m.endRequest(s, e, out)
		if !resumable {
			// A first page or a watch-list stream has nothing to resume from.
			discardStaged(s, out)
			s.List.Continue = ""
		} else {
			// The page is retried whole with its token: what came of it goes.
			discardPageItems(s, out)
		}
	case fsm.CauseInitialEvent:
		if e.Type != fsm.Bookmark {
			s.List.Staged++
			emit(out, fsm.Command{Kind: fsm.CmdStage, Type: e.Type, Key: e.Key, Object: e.Object, Items: e.Items, ItemCount: e.ItemCount})
		}
	case fsm.CauseInitialEventsEnd:
		// The stream that delivered the initial state goes on as the watch: a watch that
		// opens now, with nothing delivered yet.
		m.replace(s, e.ResourceVersion, e.Now, out)
		streamClosed(s)
		streamOpened(s, e)
	case fsm.CauseWatchListUnsupported:
		discardStaged(s, out)
		s.Server.WatchListUnsupported = true
		m.startListing(s, out)

	case fsm.CauseServerBusy, fsm.CauseConnectFailed, fsm.CauseStreamEndedQuickly:
		m.watchFailed(s, e, out)
	case fsm.CauseWatchRejectedOnce, fsm.CauseWatchRejected:
		m.watchFailed(s, e, out)
		s.Watch.Rejected = true
	case fsm.CauseInternalErrorInWindow:
		m.noteInternalError(s, e)
		m.watchFailed(s, e, out)
	case fsm.CauseInternalErrorPastWindow:
		// The streak is spent: relist. The completed LIST ends the streak, so a lasting outage
		// costs one LIST per window, not one per error.
		m.watchFailed(s, e, out)
	case fsm.CauseStreamEnded:
		m.watchFailed(s, e, out)
		m.openWatch(s, out)
	case fsm.CauseExpired, fsm.CauseExpiredAgain:
		s.Watch.ExpiredStreak++
		m.watchFailed(s, e, out)
	case fsm.CauseExpiredYoungCache:
		s.Watch.FreshTried = true
		m.watchFailed(s, e, out)
		m.openWatch(s, out)
		(*out)[len(*out)-1].FreshConnection = true
	case fsm.CauseTooLargeRV:
		s.RVUnusable = true
		m.watchFailed(s, e, out)

	case fsm.CauseRetryWatch:
		s.Wait.Timer = 0
		m.openWatch(s, out)
	case fsm.CauseRetryRelist, fsm.CauseRetryList:
		s.Wait.Timer = 0
		switch {
		case s.List.Continue != "":
			m.listPage(s, out, pageContinue, s.List.Continue)
		case s.Cause.BeginsRelist():
			// The wait was begun by a row that begins a relist: its first LIST goes out now.
			m.relistNow(s, e, out)
		default:
			m.startListing(s, out)
		}

	case fsm.CauseStop:
		m.stop(s, out)
	}
	switch {
	case row.BeginsRelist():
		m.beginRelist(s, e, row, out)
	case row.To == fsm.Backoff:
		m.backoff(s, row, m.delay(s, e, row.Then), out)
	}
	m.keepDeadline(s, e, row, out)
}

// watchEvent is the hot path: one ADDED/MODIFIED/DELETED/BOOKMARK frame on an open watch.
func (m *Machine) watchEvent(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if !s.Watch.Open {
		// A frame proves the stream is open even if the driver reported no headers event.
		streamOpened(s, e)
		accepted(s)
	}
	if e.ResourceVersion != "" && e.ResourceVersion != s.LastRV {
		progress(s, e)
		s.Watch.Progressed, s.Watch.QuickEnds = true, 0
	}
	s.Watch.Events++
	s.Watch.ExpiredStreak, s.Watch.FreshTried = 0, false
	frameHeard(s, e.Now)
	if e.Type != fsm.Bookmark {
		emit(out, fsm.Command{Kind: fsm.CmdApply, Type: e.Type, Key: e.Key, ResourceVersion: e.ResourceVersion, Object: e.Object})
	}
}

// watchFailed closes the books on the current watch. A watch that stayed open past the
// quick-end threshold breaks a streak of quick ends even if it delivered nothing: a quiet
// resource is not a failing server.
func (m *Machine) watchFailed(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if m.quickEnd(s, e) {
		s.Watch.QuickEnds++
	} else {
		s.Watch.QuickEnds = 0
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
	streamClosed(s)
}

// streamOpened notes that the server opened the stream in flight.
func streamOpened(s *fsm.Snapshot, e *fsm.Event) {
	s.Watch.Open, s.Watch.OpenedAt, s.Watch.Rejected = true, e.Now, false
	s.Watch.Silence.HeardAt = e.Now
}

// streamClosed forgets the current stream; the streaks that span watches stay.
func streamClosed(s *fsm.Snapshot) {
	s.Watch.Open, s.Watch.OpenedAt, s.Watch.Events, s.Watch.Progressed = false, zeroTime, 0, false
}

// noteInternalError starts a streak at its first error. Later errors do not move the start:
// time spent waiting between them is part of the streak's age, never a reason to forget it.
func (m *Machine) noteInternalError(s *fsm.Snapshot, e *fsm.Event) {
	if s.InternalErrors.Start.IsZero() {
		s.InternalErrors.Start, s.InternalErrors.Rewatches = e.Now, 0
	}
}

func (m *Machine) stop(s *fsm.Snapshot, out *[]fsm.Command) {
	if s.Request != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelRequest, Request: s.Request})
		s.Request = 0
	}
	discardStaged(s, out)
	s.List.Continue = ""
	if s.Wait.Timer != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelTimer, Timer: s.Wait.Timer})
		s.Wait.Timer = 0
	}
	streamClosed(s)
	emit(out, fsm.Command{Kind: fsm.CmdStopped})
}

func (m *Machine) nextID(s *fsm.Snapshot) uint64 {
	s.Seq++
	return s.Seq
}

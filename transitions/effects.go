package transitions

import (
	"github.com/rewatch/rewatch/fsm"
)

// The effects the rules share (rules_*.go): a watch's frames and its end, a request's end,
// the stream's bookkeeping and the stop.

// watchEvent is the hot path: one ADDED/MODIFIED/DELETED/BOOKMARK frame on an open watch.
func (m *Machine) watchEvent(s *fsm.Snapshot, e *fsm.Event, out []fsm.Command) []fsm.Command {
	if !s.Watch.Open {
		// A frame proves the stream is open even if the driver reported no headers event.
		streamOpened(s, e)
		accepted(s)
	}
	catchingUp := s.Resume.CatchingUp
	if e.ResourceVersion != "" && e.ResourceVersion != s.LastRV {
		progress(s, e)
		s.Watch.Progressed = true
		if catchingUp {
			catchUp(s, e.ResourceVersion)
		}
	}
	s.Watch.Events++
	s.Moments.Frames++
	if catchingUp {
		// A catch-up's frames teach the silence rule no cadence (fsm.ResumeState.LastFrame),
		// but the watch was heard from.
		now := fsm.InstantOf(e.Now)
		s.Resume.LastFrame, s.Watch.Silence.HeardAt = now, now
	} else {
		frameHeard(s, e.Now)
	}
	if e.Type != fsm.Bookmark {
		out = apply(out, e)
	}
	return out
}

// apply appends the store change of a watch frame. It fills the command in its place in out:
// a composite literal appended is built in a temporary and copied (a Command is 200 bytes),
// which costs a third of a watch frame's step.
func apply(out []fsm.Command, e *fsm.Event) []fsm.Command {
	n := len(out)
	if n == cap(out) {
		out = append(out, fsm.Command{})
	} else {
		out = out[:n+1]
		out[n] = fsm.Command{}
	}
	c := &out[n]
	c.Kind, c.Type, c.Key, c.ResourceVersion, c.Object = fsm.CmdApply, e.Type, e.Key, e.ResourceVersion, e.Object
	return out
}

// watchFailed closes the books on the current watch. A watch that stayed open past the
// quick-end threshold breaks a streak of quick ends even if it delivered nothing: a quiet
// resource is not a failing server.
func (m *Machine) watchFailed(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if m.quickEnd(s, e) {
		quickEnds.add(s)
	} else {
		quickEnds.end(s)
	}
	m.endRequest(s, e, out)
}

// quickEnd: the watch ended within QuickWatch of opening without moving the RV. A bookmark
// that repeats the RV the watch opened at is nothing delivered: a server that answers every
// watch with one and then ends it would otherwise be re-watched at once, forever
// (docs/semantics.md, "watch stream ends").
func (m *Machine) quickEnd(s *fsm.Snapshot, e *fsm.Event) bool {
	return !s.Watch.Progressed && (!s.Watch.Open || e.Now.Sub(s.Watch.OpenedAt) < m.cfg.QuickWatch)
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

// streamOpened notes that the server opened the stream in flight: a moment that ends streaks
// (fsm.AtOpen).
func streamOpened(s *fsm.Snapshot, e *fsm.Event) {
	s.Watch.Open, s.Watch.OpenedAt = true, e.Now
	s.Moments.Opened++
	s.Watch.Silence.HeardAt = fsm.InstantOf(e.Now)
}

// streamClosed forgets the current stream; the streaks that span watches stay.
func streamClosed(s *fsm.Snapshot) {
	s.Watch.Open, s.Watch.OpenedAt, s.Watch.Events, s.Watch.Progressed = false, zeroTime, 0, false
}

// noteInternalError starts a streak at its first error. Later errors do not move the start:
// time spent waiting between them is part of the streak's age, never a reason to forget it.
func noteInternalError(s *fsm.Snapshot, e *fsm.Event) {
	if !s.InternalErrors.Live(&s.Moments) {
		s.InternalErrors.Start, s.InternalErrors.Rewatches = e.Now, 0
		internalErrors.add(s)
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

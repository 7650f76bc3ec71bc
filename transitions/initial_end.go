package transitions

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// A watch-list's initial state is complete at the BOOKMARK annotated k8s.io/initial-events-end.
// Some servers never send it — aggregated APIs built on older apiserver libraries, proxies that
// drop the annotation — and a reflector that waits for it waits forever in Listing (client-go
// from v0.35 then never syncs, with no error). So the machine falls back to paginated LISTs, for
// the reflector's life, when the end will not come: on a BOOKMARK without the annotation in the
// initial phase, or when the initial events fall silent for initialEventsSilence without it
// (docs/semantics.md, "Streaming list").

// initialEventsSilence bounds the silence of a watch-list's initial phase. kube-apiserver sends
// the initial events from its watch cache's memory as fast as it can write them, once the
// stream is open (a consistent read waits for its cache to be fresh, up to 3 s, before it
// answers), and ends them with a bookmark its cacher dispatches at the next tick of its
// bookmark timer, every 1–1.25 s. A stream open that long with nothing more on it is eight
// ticks past the last event: the end is not coming.
const initialEventsSilence = 10 * time.Second

// armEndDeadline arms the deadline of the initial phase, due initialEventsSilence after the
// stream last delivered (or opened).
func (m *Machine) armEndDeadline(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	if s.List.HeardAt.IsZero() || s.List.HeardAt.Before(s.Watch.OpenedAt) {
		s.List.HeardAt = e.Now
	}
	s.List.EndTimer = m.nextID(s)
	emit(out, fsm.Command{Kind: fsm.CmdWatchDeadline, Request: s.Request, Timer: s.List.EndTimer,
		Delay: max(s.List.HeardAt.Add(initialEventsSilence).Sub(e.Now), MinWait)})
}

// endDeadlineOff disarms the deadline: the initial phase is over, one way or another. Into
// Backoff, the wait's timer replaces it in the driver, and a stop disarms every timer.
func endDeadlineOff(s *fsm.Snapshot, row fsm.Transition, out *[]fsm.Command) {
	if row.To != fsm.Backoff && row.To != fsm.Stopped {
		emit(out, fsm.Command{Kind: fsm.CmdCancelTimer, Timer: s.List.EndTimer})
	}
	s.List.EndTimer, s.List.HeardAt = 0, zeroTime
}

// watchListNoEnd ends the stream and lists by pages, from now on.
func (m *Machine) watchListNoEnd(s *fsm.Snapshot, out *[]fsm.Command) {
	if s.Request != 0 {
		emit(out, fsm.Command{Kind: fsm.CmdCancelRequest, Request: s.Request})
	}
	s.Request = 0
	streamClosed(s)
	discardStaged(s, out)
	s.Server.WatchListUnsupported = true
	m.startListing(s, out)
}

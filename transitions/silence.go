package transitions

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// The silence rule (docs/semantics.md, "silent watch"): how long a watch may stay silent
// before the machine ends it and re-watches from the last RV. A stream silent from its start
// is bounded by WatchSilence alone, which the watch command carries and the transport
// measures: a healthy quiet watch's first bookmark may take two minutes. A stream that has
// shown a cadence is bounded by that cadence, which is what keeps the resume RV resumable:
// the machine arms a deadline (fsm.CmdWatchDeadline) and, when it fires, ends the stream if
// it has been silent for the bound, or arms the next deadline if it has delivered since.

const (
	// silenceGapFactor: a stream is silent once it has gone this many times its cadence (its
	// longest recent gap) without a frame.
	silenceGapFactor = 4
	// silenceGapDecay: the cadence loses 1/2^silenceGapDecay at every frame, so that it follows
	// a stream that speeds up (from a quiet 60 s to 250 ms within about 250 frames) and is not
	// pulled down by one burst of a few dozen frames.
	silenceGapDecay = 6
	// quietGap: a stream whose cadence reaches half the apiserver's bookmark interval (60 s)
	// delivers bookmarks rather than events, and its silence is WatchSilence's alone.
	quietGap = 30 * time.Second
	// silenceGrowth: each further re-watch of one silence has this many times the bound of the
	// one before (5, 15, 45, 135 s): three tries inside the RV's 75 s (at 5, 20 and 65 s of
	// silence), and a resource that falls quiet for good is cut at most three times before its
	// first bookmark (60 or 120 s) comes within the bound.
	silenceGrowth = 3
	// maxSilenceGrowths bounds the growth of the bound over the re-watches of one silence.
	maxSilenceGrowths = 16
)

// frameHeard notes a frame of the watch in flight at now: the gap since the frame before it
// (on this watch or, across a re-watch, the one before) joins the cadence, and the silence is
// over. It is on the hot path: no allocation, a few integer operations. The gap is the
// difference of the two times' Unix nanoseconds, which is what time.Time.Sub gives for any two
// frames a reflector sees, without Sub's overflow checks (a third of a watch frame's step);
// and the frame is when the watch was last heard from (heardAt), so that no second time is
// written.
func frameHeard(s *fsm.Snapshot, now time.Time) {
	w := &s.Watch.Silence
	at := fsm.InstantOf(now)
	if w.LastFrame != 0 {
		gap := at.Sub(w.LastFrame)
		w.Gap -= w.Gap >> silenceGapDecay
		if gap > w.Gap {
			w.Gap = gap
		}
		w.GapKnown = true
	}
	w.LastFrame = at
	if w.Cuts != 0 {
		w.Cuts = 0
	}
}

// heardAt is when the watch in flight last showed life: asked for, opened, or a frame (the
// last frame is LastFrame; HeardAt holds the rest, and a catch-up's frames, which are no
// cadence).
func heardAt(w *fsm.WatchSilence) fsm.Instant { return max(w.LastFrame, w.HeardAt) }

// forgetFrames starts the cadence's gaps afresh after a full state: the time a listing took
// is no gap between frames. The cadence itself is the resource's and stays.
func forgetFrames(s *fsm.Snapshot) {
	s.Watch.Silence.LastFrame, s.Watch.Silence.Cuts = 0, 0
}

// activeSilence is the bound of the watch in flight when the silence rule bounds it, and
// false when only WatchSilence does (the rule is off, no cadence is known yet, the stream is
// quiet, or the re-watches of one silence have grown the bound to WatchSilence).
func (m *Machine) activeSilence(s *fsm.Snapshot) (time.Duration, bool) {
	w := &s.Watch.Silence
	q := m.cfg.WatchSilence
	if m.cfg.ActiveWatchSilence < 0 || q < 0 || !w.GapKnown || w.Gap >= quietGap {
		return 0, false
	}
	hi := min(m.cfg.ActiveWatchSilence, q)
	lo := min(m.cfg.ActiveWatchSilenceFloor, hi)
	b := min(max(silenceGapFactor*w.Gap, lo), hi)
	for range min(w.Cuts, maxSilenceGrowths) {
		b *= silenceGrowth
	}
	if b >= q {
		return 0, false
	}
	return b, true
}

// silentPastBound reads a fired deadline: the stream has been silent for its bound (otherwise
// it has delivered since and gets its next deadline).
func silentPastBound(m *Machine, s *fsm.Snapshot, e fsm.Event) bool {
	b, ok := m.activeSilence(s)
	return ok && fsm.InstantOf(e.Now).Sub(heardAt(&s.Watch.Silence)) >= b
}

// watchSilent ends the silent stream and re-watches from the last RV on a fresh connection:
// behind a load balancer, the kube-apiserver that held the stream may be the one that has
// stopped (cut off from etcd, its watch cache frozen), and the load balancer can send a new
// connection elsewhere (docs/semantics.md, "silent watch", "behind a load balancer").
func (m *Machine) watchSilent(s *fsm.Snapshot, out *[]fsm.Command) {
	emit(out, fsm.Command{Kind: fsm.CmdCancelRequest, Request: s.Request})
	s.Request = 0
	s.Watch.Silence.Timer = 0
	s.Watch.Silence.Cuts++
	m.openWatch(s, out)
	(*out)[len(*out)-1].FreshConnection = true
}

// keepDeadline runs after every transition: it keeps the deadline of the watch in flight
// armed while the silence rule bounds it, and disarms it otherwise — while the caller is asked
// a question (a credentials refresh) there is no watch in flight, and nothing to cut short. A
// new watch's silence runs from the moment it was asked for. The hot path — a frame on a watch whose deadline is
// armed — costs a few comparisons.
func (m *Machine) keepDeadline(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition, out *[]fsm.Command) {
	if !deadlineHolds(s, row) {
		m.moveDeadline(s, e, row, out)
	}
}

// deadlineHolds is keepDeadline's hot path, small enough to inline into the step: a deadline
// is armed for this very watch, which stays, and the rule still bounds it (a quiet stream falls
// through: disarmed). For is only ever a watch's own request, so the request in flight is no
// question for the caller nor a watch-list stream.
func deadlineHolds(s *fsm.Snapshot, row fsm.Transition) bool {
	w := &s.Watch.Silence
	return w.Timer != 0 && w.For == s.Request && row.To == fsm.Watching && w.Gap < quietGap
}

// moveDeadline is keepDeadline but its hot path: it arms, re-arms or disarms the deadline.
func (m *Machine) moveDeadline(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition, out *[]fsm.Command) {
	w := &s.Watch.Silence
	if row.To != fsm.Watching || s.Request == 0 || s.List.Streaming || s.Request == s.Asked.Request {
		if w.Timer != 0 && row.To != fsm.Backoff && row.To != fsm.Stopped {
			// Backoff's timer replaces the deadline in the driver, and a stop disarms it.
			emit(out, fsm.Command{Kind: fsm.CmdCancelTimer, Timer: w.Timer})
		}
		w.Timer, w.For = 0, 0
		return
	}
	if w.For != s.Request {
		// A new watch: its silence runs from the moment it was asked for, and its deadline
		// replaces the last watch's in the driver.
		w.For, w.HeardAt = s.Request, fsm.InstantOf(e.Now)
	}
	b, ok := m.activeSilence(s)
	if !ok {
		if w.Timer != 0 {
			emit(out, fsm.Command{Kind: fsm.CmdCancelTimer, Timer: w.Timer})
			w.Timer = 0
		}
		return
	}
	w.Timer = m.nextID(s)
	emit(out, fsm.Command{Kind: fsm.CmdWatchDeadline, Request: s.Request, Timer: w.Timer,
		Delay: max(b-fsm.InstantOf(e.Now).Sub(heardAt(w)), MinWait)})
}

package transitions

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// Asking the caller (docs/design.md, "How to add a caller hook"). A rule that needs the
// caller — to refresh credentials, say — asks through ask: the question is the request in
// flight, the driver calls the caller's hook for it, and the answer comes back as an
// fsm.EvAnswer, which a rule reads with answered(hook). The answer is an event, so the journal
// holds it and a replay decides the same way without calling anyone. Which hooks the caller
// has is the configuration's (journaled in its header), so that a replay knows too.

// ask asks the caller the question h at now: it becomes the request in flight, and when it
// was last asked is noted (Snapshot.Asked), for rules that ask at most so often.
func (m *Machine) ask(s *fsm.Snapshot, h fsm.Hook, now time.Time, out *[]fsm.Command) {
	s.Request = m.nextID(s)
	s.Asked.Last[h], s.Asked.Request = now, s.Request
	emit(out, fsm.Command{Kind: fsm.CmdAsk, Request: s.Request, Hook: h})
}

// answered is the reading of the caller's answer to h.
func answered(h fsm.Hook) reading {
	return on(answersAsk, fsm.EvAnswer).when(func(_ *Machine, _ *fsm.Snapshot, e fsm.Event) bool {
		return e.Hook == h
	})
}

// askedWithin reports whether h was asked less than d before now.
func askedWithin(s *fsm.Snapshot, h fsm.Hook, now time.Time, d time.Duration) bool {
	last := s.Asked.Last[h]
	return !last.IsZero() && now.Sub(last) < d
}

package fsmcheck

import (
	"fmt"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Step is m.Step that also fires the cause on the qmuntal/stateless machine built from
// fsm.Table and fails if stateless disagrees about the transition. It costs a stateless Fire
// (hundreds of nanoseconds and a few allocations) per event, so it is for tests and for
// drivers run with checks on, not the default path. On error *s is left unchanged.
func Step(m *transitions.Machine, s *fsm.Snapshot, e *fsm.Event, out []fsm.Command) ([]fsm.Command, error) {
	before := *s
	cause := m.Classify(s, e)
	if cause == fsm.NoCause {
		return out, nil
	}
	n := len(out)
	out = m.Step(s, e, out)
	if err := CheckTransition(before.State, cause, s.State); err != nil {
		*s = before
		return out[:n], fmt.Errorf("fsmcheck: event %s: %w", e, err)
	}
	return out, nil
}

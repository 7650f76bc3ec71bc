package fsmcheck

import (
	"fmt"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// Step is m.Step that also checks the step against the table (CheckStep) and fails if the two
// disagree. It costs a stateless Fire (hundreds of nanoseconds and a few allocations) per event,
// so it is for tests and for drivers run with checks on, not the default path. On error *s is
// left unchanged.
func Step(m *transitions.Machine, s *fsm.Snapshot, e *fsm.Event, out []fsm.Command) ([]fsm.Command, error) {
	before := *s
	cause := m.Classify(s, e)
	if cause == fsm.NoCause {
		return out, nil
	}
	n := len(out)
	out = m.Step(s, e, out)
	if err := CheckStep(before, cause, *s); err != nil {
		*s = before
		return out[:n], fmt.Errorf("fsmcheck: event %s: %w", e, err)
	}
	return out, nil
}

// CheckStep fails when the step from before to after for cause is not one transitions.Table
// allows: a transition the stateless machine built from the table refuses or sends elsewhere, a wait
// whose Snapshot.Next is not its row's Then, or a timer that leads anywhere but the Next its
// wait was armed with.
func CheckStep(before fsm.Snapshot, cause fsm.Cause, after fsm.Snapshot) error {
	if err := CheckTransition(before.State, cause, after.State); err != nil {
		return err
	}
	if after.State == fsm.Backoff {
		row, _ := transitions.Table.Lookup(before.State, cause)
		if after.Wait.Next != row.Then {
			return fmt.Errorf("fsmcheck: %s --%s--> Backoff waits to go on in %s, the table says %s", before.State, cause, after.Wait.Next, row.Then)
		}
	}
	if before.State == fsm.Backoff && cause != fsm.CauseStop && after.State != before.Wait.Next {
		return fmt.Errorf("fsmcheck: Backoff --%s--> %s, but the wait was armed to lead to %s", cause, after.State, before.Wait.Next)
	}
	return nil
}

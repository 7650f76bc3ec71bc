package fsm

import (
	"context"
	"fmt"

	"github.com/qmuntal/stateless"
)

// NewStateless builds a qmuntal/stateless machine from Table, starting in initial. Its triggers
// are Causes. It is not the runtime path (a Fire costs hundreds of nanoseconds and allocates);
// it serves introspection (PermittedTriggers), graph export (ToGraph) and validation.
func NewStateless(initial State) *stateless.StateMachine {
	sm := stateless.NewStateMachine(initial)
	configure(sm)
	return sm
}

// NewStatelessOver builds the same machine over externally held state, so a checker can follow
// a snapshot's state without copying it into the machine.
func NewStatelessOver(get func() State, set func(State)) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return get(), nil },
		func(_ context.Context, s stateless.State) error { set(s.(State)); return nil },
		stateless.FiringImmediate)
	configure(sm)
	return sm
}

func configure(sm *stateless.StateMachine) {
	for _, s := range States() {
		sm.Configure(s)
	}
	for _, row := range Table {
		cfg := sm.Configure(row.From)
		if row.From == row.To {
			cfg.PermitReentry(row.Cause)
		} else {
			cfg.Permit(row.Cause, row.To)
		}
	}
}

// CheckTransition fails when from --cause--> to is not a transition the stateless machine
// built from Table would take.
func CheckTransition(from State, cause Cause, to State) error {
	cur := from
	sm := NewStatelessOver(func() State { return cur }, func(s State) { cur = s })
	if err := sm.Fire(cause); err != nil {
		return fmt.Errorf("fsm: %s --%s--> not permitted: %w", from, cause, err)
	}
	if cur != to {
		return fmt.Errorf("fsm: %s --%s--> leads to %s, not %s", from, cause, cur, to)
	}
	return nil
}

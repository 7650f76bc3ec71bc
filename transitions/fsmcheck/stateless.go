// Package fsmcheck builds a qmuntal/stateless machine from transitions.Table for introspection,
// graph export and validation. It lives beside what it checks, in a package of its own, so that
// the pure core does not link stateless into every consumer (docs/design.md, "The hot path and
// stateless").
package fsmcheck

import (
	"context"
	"fmt"

	"github.com/qmuntal/stateless"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// NewStateless builds a qmuntal/stateless machine from transitions.Table, starting in initial.
// Its triggers are Causes. It is not the runtime path (a Fire costs hundreds of nanoseconds and allocates);
// it serves introspection (PermittedTriggers), graph export (ToGraph) and validation.
func NewStateless(initial fsm.State) *stateless.StateMachine {
	sm := stateless.NewStateMachine(initial)
	configure(sm)
	return sm
}

// NewStatelessOver builds the same machine over externally held state, so a checker can follow
// a snapshot's state without copying it into the machine.
func NewStatelessOver(get func() fsm.State, set func(fsm.State)) *stateless.StateMachine {
	sm := stateless.NewStateMachineWithExternalStorage(
		func(context.Context) (stateless.State, error) { return get(), nil },
		func(_ context.Context, s stateless.State) error { set(s.(fsm.State)); return nil },
		stateless.FiringImmediate)
	configure(sm)
	return sm
}

func configure(sm *stateless.StateMachine) {
	for _, s := range fsm.States() {
		sm.Configure(s)
	}
	for _, row := range transitions.Table.Rows() {
		cfg := sm.Configure(row.From)
		if row.From == row.To {
			cfg.PermitReentry(row.Cause)
		} else {
			cfg.Permit(row.Cause, row.To)
		}
	}
}

// CheckTransition fails when from --cause--> to is not a transition the stateless machine
// built from transitions.Table would take.
func CheckTransition(from fsm.State, cause fsm.Cause, to fsm.State) error {
	cur := from
	sm := NewStatelessOver(func() fsm.State { return cur }, func(s fsm.State) { cur = s })
	if err := sm.Fire(cause); err != nil {
		return fmt.Errorf("fsmcheck: %s --%s--> not permitted: %w", from, cause, err)
	}
	if cur != to {
		return fmt.Errorf("fsmcheck: %s --%s--> leads to %s, not %s", from, cause, cur, to)
	}
	return nil
}

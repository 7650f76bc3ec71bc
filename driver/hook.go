package driver

import (
	"context"

	"github.com/rewatch/rewatch/fsm"
)

// Hook is how the caller answers one of the machine's questions (an fsm.Hook, asked by
// fsm.CmdAsk): with a value of the type the question declares (fsm.Hook.CheckAnswer; nil for
// a question answered by doing something, such as refreshing credentials), or an error. The
// driver calls it on a goroutine of its own, as a request: a stop ends its context. What it
// returned goes back to the machine as an fsm.EvAnswer, so the journal records it and a replay
// needs no caller (docs/design.md, "How to add a caller hook").
type Hook func(ctx context.Context) (fsm.Answer, error)

// Acting is the Hook of a question answered by doing something: its answer is whether it
// worked. Acting(nil) is no hook.
func Acting(act func(ctx context.Context) error) Hook {
	if act == nil {
		return nil
	}
	return func(ctx context.Context) (fsm.Answer, error) { return nil, act(ctx) }
}

// Answering is the Hook of a question answered with a value of type T, the question's answer
// type (a façade option's typed function). Answering(nil) is no hook.
func Answering[T fsm.Answer](f func(ctx context.Context) (T, error)) Hook {
	if f == nil {
		return nil
	}
	return func(ctx context.Context) (fsm.Answer, error) {
		a, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return a, nil
	}
}

// answer calls the caller's hook for the question c asks, and makes what it returned the
// machine's event: its answer, or its error — a missing hook's, or a hook's answer of
// another type than the question's — as the event's failure.
func answer(ctx context.Context, hook Hook, c fsm.Command) fsm.Event {
	e := fsm.Event{Kind: fsm.EvAnswer, Request: c.Request, Hook: c.Hook}
	var a fsm.Answer
	err := errNoHook
	if hook != nil {
		a, err = hook(ctx)
	}
	if err == nil {
		err = c.Hook.CheckAnswer(a)
	}
	if err != nil {
		e.Failure = &fsm.Failure{Message: "hook " + c.Hook.String() + ": " + err.Error()}
		return e
	}
	e.Answer = a
	return e
}

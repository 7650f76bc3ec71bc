package driver

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewatch/rewatch/fsm"
)

type strayAnswer struct{}

func (strayAnswer) MarshalText() ([]byte, error) { return []byte("stray"), nil }

func TestNoFunctionIsNoHook(t *testing.T) {
	assert.Nil(t, Acting(nil))
	assert.Nil(t, Answering[strayAnswer](nil))
}

// What a hook returned becomes the machine's event: its answer, or its error as the event's
// failure — a missing hook's, and an answer of another type than its question's, which the
// driver does not pass on (the machine would read it as nothing it knows).
func TestAHooksAnswerIsTheMachinesEvent(t *testing.T) {
	ask := fsm.Command{Kind: fsm.CmdAsk, Request: 4, Hook: fsm.HookRefreshCredentials}
	for name, c := range map[string]struct {
		hook    Hook
		failure string
	}{
		"it worked":      {hook: Acting(func(context.Context) error { return nil })},
		"it failed":      {hook: Acting(func(context.Context) error { return errors.New("exec plugin failed") }), failure: "hook refresh-credentials: exec plugin failed"},
		"no hook":        {hook: Acting(nil), failure: "hook refresh-credentials: no hook configured"},
		"a stray answer": {hook: func(context.Context) (fsm.Answer, error) { return strayAnswer{}, nil }, failure: "hook refresh-credentials: hook refresh-credentials answers nothing but whether it worked, not a driver.strayAnswer"},
		"an error wins":  {hook: func(context.Context) (fsm.Answer, error) { return strayAnswer{}, errors.New("no") }, failure: "hook refresh-credentials: no"},
	} {
		t.Run(name, func(t *testing.T) {
			e := answer(context.Background(), c.hook, ask)
			assert.Equal(t, fsm.EvAnswer, e.Kind)
			assert.Equal(t, ask.Request, e.Request)
			assert.Equal(t, ask.Hook, e.Hook)
			assert.Nil(t, e.Answer)
			if c.failure == "" {
				assert.Nil(t, e.Failure)
				return
			}
			if assert.NotNil(t, e.Failure) {
				assert.Equal(t, c.failure, e.Failure.Message)
			}
		})
	}
}

package fsm

import (
	"encoding"
	"fmt"
	"reflect"
	"time"
)

// Hook names a question the machine asks its caller: a CmdAsk carries it, and the caller's
// answer comes back as an EvAnswer that carries it too, with the answer's value (Event.Answer)
// or the hook's error (Event.Failure). The answer is an event, so the journal records it and a
// replay decides the same way without asking anyone (docs/design.md, "How to add a caller
// hook"). A new hook is a constant here and its line in hooks — its name, and the type of what
// it answers — and no new kind of command or event.
type Hook uint8

const (
	NoHook Hook = iota
	// HookRefreshCredentials asks the caller to refresh the credentials its requests carry
	// (docs/semantics.md, "credentials expired"). It answers nothing but whether it worked.
	HookRefreshCredentials

	numHooks
)

// hooks declares every hook.
var hooks = [numHooks]hookDecl{
	HookRefreshCredentials: {name: "refresh-credentials"},
}

// hookDecl is a hook's declaration.
type hookDecl struct {
	// name is the hook's name in journals, transcripts and logs.
	name string
	// answer is the type of the hook's answer (answerOf); nil for a hook that answers nothing
	// but whether it worked.
	answer *answerType
	// examples are answers the hook may give, as text: a model caller answers with them in
	// the property tests, and the codec's test reads and writes each.
	examples []string
}

// Answer is what a caller's hook answered besides an error: a value of the type its hook
// declares, carried by EvAnswer. Journals, transcripts and logs hold it as its text, one word
// (MarshalText), and the hook reads it back (Hook.ParseAnswer), so that an answer's type is
// all a hook that answers with data adds to the vocabulary.
type Answer interface {
	encoding.TextMarshaler
}

// answerType is a hook's answer type, as answerOf declares it.
type answerType struct {
	name string
	read func(text []byte) (Answer, error)
	is   func(Answer) bool
}

// answerOf declares T as a hook's answer type: its text is read back by *T's UnmarshalText.
func answerOf[T Answer, P interface {
	*T
	encoding.TextUnmarshaler
}]() *answerType {
	return &answerType{
		name: reflect.TypeFor[T]().String(),
		read: func(text []byte) (Answer, error) {
			var v T
			if err := P(&v).UnmarshalText(text); err != nil {
				return nil, err
			}
			return v, nil
		},
		is: func(a Answer) bool { _, ok := a.(T); return ok },
	}
}

var hookNames = func() enumNames[Hook] {
	n := enumNames[Hook]{typ: "Hook", kind: "hook", names: make([]string, numHooks)}
	for h, d := range hooks {
		n.names[h] = d.name
	}
	return n
}()

func (h Hook) String() string                { return hookNames.String(h) }
func (h Hook) MarshalText() ([]byte, error)  { return hookNames.MarshalText(h) }
func (h *Hook) UnmarshalText(b []byte) error { return hookNames.UnmarshalText(h, b) }

// Hooks lists every hook.
func Hooks() []Hook {
	out := make([]Hook, 0, numHooks-1)
	for h := NoHook + 1; h < numHooks; h++ {
		out = append(out, h)
	}
	return out
}

// decl is h's declaration; the zero one for a value that is no hook.
func (h Hook) decl() hookDecl {
	if h < numHooks {
		return hooks[h]
	}
	return hookDecl{}
}

// Answers reports whether the hook answers with a value (Event.Answer), not only whether it
// worked.
func (h Hook) Answers() bool { return h.decl().answer != nil }

// ParseAnswer reads the text of an answer to h.
func (h Hook) ParseAnswer(text string) (Answer, error) {
	typ := h.decl().answer
	if typ == nil {
		return nil, fmt.Errorf("fsm: hook %s answers nothing but whether it worked, not %q", h, text)
	}
	a, err := typ.read([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("fsm: hook %s: answer %q: %w", h, text, err)
	}
	return a, nil
}

// CheckAnswer reports whether a is an answer h can give when it worked: a value of its answer
// type, or nil for a hook that answers with none.
func (h Hook) CheckAnswer(a Answer) error {
	typ := h.decl().answer
	switch {
	case typ == nil && a == nil:
		return nil
	case typ == nil:
		return fmt.Errorf("hook %s answers nothing but whether it worked, not a %T", h, a)
	case a == nil:
		return fmt.Errorf("hook %s answered no %s", h, typ.name)
	case !typ.is(a):
		return fmt.Errorf("hook %s answers a %s, not a %T", h, typ.name, a)
	}
	return nil
}

// Examples are answers h may give, as the text ParseAnswer reads: "" (no value) for a hook
// that answers nothing but whether it worked.
func (h Hook) Examples() []string {
	if d := h.decl(); d.answer != nil {
		return append([]string(nil), d.examples...)
	}
	return []string{""}
}

// AskHistory is when the machine last asked each hook, for the rules that ask at most so often.
type AskHistory struct {
	Last [numHooks]time.Time `json:"last,omitzero"`
	// Request is the id of the last question asked: while it is the request in flight, the
	// machine waits for the caller, and no deadline of a watch's may cut the caller short (a
	// credentials refresh through an exec plugin or OIDC takes seconds).
	Request uint64 `json:"request,omitempty"`
}

package fsm

import "time"

// Hook names a question the machine asks its caller: a CmdAsk carries it, and the caller's
// answer comes back as an EvAnswer that carries it too. The answer is an event, so the journal
// records it and a replay decides the same way without asking anyone (docs/design.md, "How to
// add a caller hook"). A new hook is a constant here and its name; no new kind of command or
// event.
type Hook uint8

const (
	NoHook Hook = iota
	// HookRefreshCredentials asks the caller to refresh the credentials its requests carry
	// (docs/semantics.md, "credentials expired").
	HookRefreshCredentials

	numHooks
)

var hookNames = enumNames[Hook]{typ: "Hook", kind: "hook", names: []string{"", "refresh-credentials"}}

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

// AskHistory is when the machine last asked each hook, for the rules that ask at most so often.
type AskHistory struct {
	Last [numHooks]time.Time `json:"last,omitzero"`
	// Request is the id of the last question asked: while it is the request in flight, the
	// machine waits for the caller, and no deadline of a watch's may cut the caller short (a
	// credentials refresh through an exec plugin or OIDC takes seconds).
	Request uint64 `json:"request,omitempty"`
}

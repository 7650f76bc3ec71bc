package rewatch

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// Metrics receives what the reflector does. Implementations must be cheap and must not block:
// they are called on the reflector's goroutine, WatchEvent once per frame.
type Metrics interface {
	// Request counts a LIST page ("list") or WATCH ("watch") request.
	Request(kind string)
	// Transition counts a transition by its cause.
	Transition(from, to fsm.State, cause fsm.Cause)
	// Waited records a finished backoff wait and the cause that armed it.
	Waited(reason fsm.Cause, d time.Duration)
	// WatchEvent counts one watch frame.
	WatchEvent(t fsm.WatchEventType)
	// Objects reports how many objects the store holds, when the store can tell.
	Objects(n int)
}

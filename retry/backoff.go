package retry

import (
	"time"

	"github.com/rewatch/rewatch/backoff"
)

// Backoff is the shared backoff value; its Step has apimachinery
// wait.Backoff semantics. Use backoff.FromWait to pass a wait.Backoff.
type Backoff = backoff.Backoff

// DefaultRetry is client-go's recommended backoff for conflicts between
// clients changing the same object: 5 attempts, about 10ms apart.
var DefaultRetry = Backoff{Steps: 5, Duration: 10 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// DefaultBackoff is client-go's recommended backoff for a change to an
// object that controllers are actively managing: 4 attempts, waits growing
// fivefold from 10ms.
var DefaultBackoff = Backoff{Steps: 4, Duration: 10 * time.Millisecond, Factor: 5.0, Jitter: 0.1}

// ReflectorBackoff returns client-go's reflector backoff (800ms doubling to a
// 30s cap, each delay jittered into [d, 2d)) and how long the reflector must
// be healthy before that backoff starts over.
func ReflectorBackoff() (b Backoff, resetAfter time.Duration) {
	return backoff.Reflector(), backoff.ReflectorResetAfter
}

// DefaultRetryAfterBackoff is the backoff for OnRetryAfterError when the server's word should
// decide every wait, as the Python client's DEFAULT_RETRY_AFTER_BACKOFF does: 11 steps (the
// first attempt and DefaultMaxRetries retries) and a zero base, so that each wait is
// max(0, Retry-After) — exactly what the server asked, capped by WithRetryAfterCap.
var DefaultRetryAfterBackoff = Backoff{Steps: DefaultMaxRetries + 1}

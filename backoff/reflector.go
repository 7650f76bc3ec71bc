package backoff

import "time"

// ReflectorResetAfter is how long the reflector must stay healthy before its
// backoff starts again from the initial delay (client-go's defaultBackoffReset).
const ReflectorResetAfter = 2 * time.Minute

// Reflector returns client-go's reflector backoff: 800ms, doubling, jitter
// 1.0 (each delay in [d, 2d)), capped at 30s. Steps is client-go's
// ceil(Cap/Duration) = 38; the cap is reached on the 7th step, after which
// Steps is 0 and the delay stays in [30s, 60s) forever, so in effect the
// steps never run out.
func Reflector() Backoff {
	const initial, capped = 800 * time.Millisecond, 30 * time.Second
	return Backoff{
		Duration: initial,
		Factor:   2,
		Jitter:   1,
		Steps:    int((capped + initial - 1) / initial),
		Cap:      capped,
	}
}

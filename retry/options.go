package retry

import (
	"time"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/clockx"
)

// DefaultMaxRetries bounds OnRetryAfterError, as client-go's REST client
// bounds its own Retry-After retries.
const DefaultMaxRetries = 10

// Option configures a retry helper.
type Option func(*config)

type config struct {
	clock         clockx.Clock
	rand          backoff.Source
	maxRetries    int
	retryAfterCap time.Duration
	retriable     func(error) bool
}

func newConfig(opts []Option) config {
	c := config{
		clock:         clockx.Real(),
		maxRetries:    DefaultMaxRetries,
		retryAfterCap: DefaultRetryAfterCap,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithClock makes the helper wait on c instead of the wall clock.
func WithClock(c clockx.Clock) Option { return func(cfg *config) { cfg.clock = c } }

// WithRand draws jitter from src instead of math/rand/v2's global source.
func WithRand(src backoff.Source) Option { return func(cfg *config) { cfg.rand = src } }

// WithMaxRetries sets how many times OnRetryAfterError retries after the
// first attempt (default DefaultMaxRetries); n <= 0 means no retries.
func WithMaxRetries(n int) Option { return func(cfg *config) { cfg.maxRetries = n } }

// WithRetryAfterCap bounds the Retry-After OnRetryAfterError honours
// (default DefaultRetryAfterCap). A cap of 0 ignores Retry-After and waits
// only the backoff delay.
func WithRetryAfterCap(d time.Duration) Option { return func(cfg *config) { cfg.retryAfterCap = d } }

// WithRetriable narrows OnRetryAfterError to the errors retriable accepts: an error is retried
// only if the server asked for it (429 or 5xx with a Retry-After) and retriable(err) is true,
// like the retriable predicate of OnError and of the Python client's helper.
func WithRetriable(retriable func(error) bool) Option {
	return func(cfg *config) { cfg.retriable = retriable }
}

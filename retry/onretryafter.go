package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/clockx"
)

// ResponseError is an error for a raw HTTP response, for callers that talk
// HTTP directly rather than through a Kubernetes client; OnRetryAfterError
// reads its status code and Retry-After header.
type ResponseError struct {
	StatusCode int
	Header     http.Header
	Err        error // the underlying cause, if any
}

// NewResponseError captures resp's status and headers.
func NewResponseError(resp *http.Response, cause error) *ResponseError {
	return &ResponseError{StatusCode: resp.StatusCode, Header: resp.Header.Clone(), Err: cause}
}

func (e *ResponseError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *ResponseError) Unwrap() error { return e.Err }

// OnRetryAfterError calls fn until it succeeds, returns an error that is not
// a 429 or 5xx carrying a Retry-After (returned at once), or has been retried
// WithMaxRetries times (default 10; the last error is returned). Before each
// retry it waits the larger of the backoff's next delay and the Retry-After,
// capped WithRetryAfterCap (default 5 min). Retry-After comes from a
// ResponseError's header or a Status's details.retryAfterSeconds.
//
// Here Steps only shapes the delays, as in wait.Backoff; the number of
// retries is MaxRetries.
func OnRetryAfterError(ctx context.Context, b Backoff, fn func() error, opts ...Option) error {
	cfg := newConfig(opts)
	for retries := 0; ; retries++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn()
		if err == nil {
			return nil
		}
		after, ok := serverAskedToRetry(err, cfg.clock.Now())
		if !ok || retries >= cfg.maxRetries || (cfg.retriable != nil && !cfg.retriable(err)) {
			return err
		}
		wait := max(b.Step(cfg.rand), Cap(after, cfg.retryAfterCap))
		if err := clockx.Sleep(ctx, cfg.clock, wait); err != nil {
			return err
		}
	}
}

// serverAskedToRetry reports the Retry-After of a 429 or 5xx error that
// carries one.
func serverAskedToRetry(err error, now time.Time) (time.Duration, bool) {
	if re, ok := errors.AsType[*ResponseError](err); ok {
		if !retryableStatus(re.StatusCode) {
			return 0, false
		}
		return FromErrorAt(err, now)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return 0, false
	}
	// IsTooManyRequests also knows the reason, for Statuses without a code.
	if !apierrors.IsTooManyRequests(err) && !retryableStatus(int(status.Status().Code)) {
		return 0, false
	}
	return FromErrorAt(err, now)
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || (code >= 500 && code <= 599)
}

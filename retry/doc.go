// Package retry is client-go's util/retry and the Kubernetes Python client's
// kubernetes.utils.retry for Go, made context-aware and clock-driven.
//
// Every wait goes through a clockx.Clock (WithClock) and ends with ctx.Err()
// the moment the context is done, so a helper can be stopped at once in
// production and driven step by step in tests. Jitter comes from an
// injectable source (WithRand).
//
// OnError and RetryOnConflict keep client-go's contract: Backoff.Steps is the
// number of attempts, a non-retriable error is returned at once and, when the
// attempts run out, the last retriable error is returned (not
// wait.ErrWaitTimeout). OnRetryAfterError retries the errors a server marks
// as worth retrying later (429 and 5xx carrying a Retry-After), honouring the
// requested delay up to a cap.
//
// Retry-After is read from an HTTP header (ParseRetryAfter, FromResponse), from
// a *ResponseError's header, or from a Kubernetes Status's
// details.retryAfterSeconds (FromError, FromErrorAt). OnRetryAfterError reads
// errors through FromErrorAt, so the two never disagree.
// DefaultRetryAfterBackoff lets the server's value alone decide each wait.
//
// Where the helpers differ from client-go's util/retry and the Python
// client's kubernetes.utils.retry, on purpose:
//
//   - Every helper takes a context; a cancelled context ends the wait at once
//     with ctx.Err(). Neither reference can be stopped mid-wait.
//   - The header parser also accepts an HTTP-date, as RFC 9110 allows; both
//     references understand delta-seconds only.
//   - OnRetryAfterError caps a Retry-After (DefaultRetryAfterCap, 5 minutes;
//     WithRetryAfterCap), so a hostile value cannot park the caller; the
//     Python helper waits whatever the server says.
//   - OnRetryAfterError retries only 429 and 5xx that carry a Retry-After,
//     narrowed further by WithRetriable; the Python helper retries any error
//     its predicate accepts, Retry-After or not. Use OnError for that.
//   - Its retry count comes from WithMaxRetries (default 10, client-go's REST
//     client's bound), not from Backoff.Steps; DefaultRetryAfterBackoff's 11
//     steps say the same thing for readers of the Python default.
//   - When the attempts run out, OnError returns the last retriable error,
//     not wait.ErrWaitTimeout — the behaviour client-go's callers rely on.
package retry

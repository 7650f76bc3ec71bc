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
// Retry-After is read from an HTTP header (ParseRetryAfter, FromResponse) or
// from a Kubernetes Status's details.retryAfterSeconds (FromError). Unlike
// client-go and the Python client, which understand only delta-seconds, the
// header parser also accepts an HTTP-date, as RFC 9110 allows; that is a
// deliberate difference.
package retry

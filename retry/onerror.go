package retry

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rewatch/rewatch/clockx"
)

// OnError calls fn until it succeeds, returns an error retriable rejects, or
// b.Steps attempts have been made, waiting b.Step between attempts.
//
// As in client-go, running out of attempts returns the last retriable error
// itself, and a Backoff with Steps < 1 makes no attempt at all (see
// ErrNoAttempts). Also as in client-go, the step at which the delay reaches
// Cap sets Steps to 0 and so ends the attempts early; client-go then still
// sleeps once before giving up, which OnError skips since no attempt follows. Unlike client-go, a done context ends the wait at once
// and OnError returns ctx.Err(); it is also checked before every attempt.
func OnError(ctx context.Context, b Backoff, retriable func(error) bool, fn func() error, opts ...Option) error {
	cfg := newConfig(opts)
	var last error
	for b.Steps > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := fn()
		switch {
		case err == nil:
			return nil
		case !retriable(err):
			return err
		}
		last = err
		if b.Steps == 1 {
			break
		}
		d := b.Step(cfg.rand)
		if b.Steps == 0 {
			// Hitting Cap zeroes Steps, which ends client-go's loop after
			// it has slept; we give up without that pointless wait.
			break
		}
		if err := clockx.Sleep(ctx, cfg.clock, d); err != nil {
			return err
		}
	}
	if last == nil {
		return ErrNoAttempts
	}
	return last
}

// ErrNoAttempts is what OnError returns for a Backoff with Steps < 1, where
// client-go returns wait.ErrWaitTimeout; wait.Interrupted reports true for
// both, and this one does not use the deprecated variable.
var ErrNoAttempts = wait.ErrorInterrupted(errors.New("retry: backoff allows no attempts (Steps < 1)"))

// RetryOnConflict is OnError retrying HTTP 409 Conflict, for a
// read-modify-write of an object: fn must re-read the object on every
// attempt and return the update's error unwrapped, or wrapped with %w.
func RetryOnConflict(ctx context.Context, b Backoff, fn func() error, opts ...Option) error {
	return OnError(ctx, b, apierrors.IsConflict, fn, opts...)
}

package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/retry"
)

// Cancelling during a 30s wait returns context.Canceled at once: the mock
// clock never moves, the timer is stopped, and goleak (TestMain) checks that
// no goroutine is left.
func TestCancelDuringWait(t *testing.T) {
	thirty := retry.Backoff{Duration: 30 * time.Second, Factor: 1, Steps: 5}
	helpers := map[string]func(ctx context.Context, m *clockx.Mock) error{
		"OnError": func(ctx context.Context, m *clockx.Mock) error {
			return retry.OnError(ctx, thirty, func(error) bool { return true },
				func() error { return errors.New("again") }, retry.WithClock(m))
		},
		"RetryOnConflict": func(ctx context.Context, m *clockx.Mock) error {
			return retry.RetryOnConflict(ctx, thirty, conflict, retry.WithClock(m))
		},
		"OnRetryAfterError": func(ctx context.Context, m *clockx.Mock) error {
			return retry.OnRetryAfterError(ctx, retry.DefaultRetry,
				func() error { return apierrors.NewTooManyRequests("slow", 30) }, retry.WithClock(m))
		},
	}
	for name, run := range helpers {
		t.Run(name, func(t *testing.T) {
			m := clockx.NewMock(epoch)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- run(ctx, m) }()

			require.NoError(t, m.WaitForTimers(t.Context(), 1))
			assert.Equal(t, []time.Duration{30 * time.Second}, m.ArmedDurations())
			cancel()
			err := <-done
			assert.ErrorIs(t, err, context.Canceled)
			assert.Same(t, context.Canceled, err, "ctx.Err() itself")
			assert.Equal(t, epoch, m.Now(), "the mock clock did not move")
			assert.Zero(t, m.Armed(), "the wait's timer was stopped")
		})
	}
}

// Driving a helper through a mock clock step by step: each wait is exactly
// the one asked for, and the helper proceeds only when time moves.
func TestWaitsGoThroughTheClock(t *testing.T) {
	m := clockx.NewMock(epoch)
	ctx := t.Context()
	fn, calls := script(conflict(), conflict())
	done := make(chan error, 1)
	go func() {
		done <- retry.RetryOnConflict(ctx, retry.DefaultRetry, fn, retry.WithClock(m), retry.WithRand(fixedRand(0)))
	}()
	for range 2 {
		require.NoError(t, m.WaitForTimers(ctx, 1))
		assert.Equal(t, []time.Duration{10 * time.Millisecond}, m.ArmedDurations())
		m.Add(10 * time.Millisecond)
	}
	assert.NoError(t, <-done)
	assert.Equal(t, 3, *calls)
}

package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientretry "k8s.io/client-go/util/retry"

	"github.com/rewatch/rewatch/retry"
)

var (
	errRetriable = errors.New("retriable")
	errFatal     = errors.New("fatal")
)

func isRetriable(err error) bool { return errors.Is(err, errRetriable) }

// script returns fn failing with the given errors in turn, then succeeding;
// each retriable failure is numbered so the test can tell which came back.
func script(errs ...error) (fn func() error, calls *int) {
	calls = new(int)
	return func() error {
		*calls++
		if *calls > len(errs) {
			return nil
		}
		if err := errs[*calls-1]; err != nil {
			return fmt.Errorf("attempt %d: %w", *calls, err)
		}
		return nil
	}, calls
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

// Pins client-go util/retry.OnError: attempts = Steps; the last retriable
// error comes back when they run out; a non-retriable error comes back at
// once; the delays are wait.Backoff's.
func TestOnErrorPinsClientGo(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		b         retry.Backoff
		errs      []error
		wantCalls int
		wantErr   string // "" for nil
		wantWaits []time.Duration
	}{
		{"success at once", retry.DefaultRetry, nil, 1, "", nil},
		{"DefaultRetry exhausted: 5 attempts, last error", retry.DefaultRetry, repeat(errRetriable, 10), 5,
			"attempt 5: retriable", []time.Duration{10500 * time.Microsecond, 10500 * time.Microsecond, 10500 * time.Microsecond, 10500 * time.Microsecond}},
		{"DefaultBackoff exhausted: 4 attempts", retry.DefaultBackoff, repeat(errRetriable, 10), 4,
			"attempt 4: retriable", []time.Duration{10500 * time.Microsecond, 52500 * time.Microsecond, 262500 * time.Microsecond}},
		{"recovers on the third attempt", retry.DefaultRetry, []error{errRetriable, errRetriable}, 3, "",
			[]time.Duration{10500 * time.Microsecond, 10500 * time.Microsecond}},
		{"non-retriable returned at once", retry.DefaultRetry, []error{errRetriable, errFatal, errRetriable}, 2,
			"attempt 2: fatal", []time.Duration{10500 * time.Microsecond}},
		{"non-retriable on the first attempt", retry.DefaultRetry, []error{errFatal}, 1, "attempt 1: fatal", nil},
		{"one step: one attempt, no wait", retry.Backoff{Steps: 1, Duration: time.Second}, repeat(errRetriable, 3), 1,
			"attempt 1: retriable", nil},
		// client-go: Step sets Steps to 0 when the delay reaches Cap, and
		// ExponentialBackoff's `for backoff.Steps > 0` then stops: reaching
		// the cap ends the attempts (client-go sleeps the 4s first; we don't).
		{"reaching cap ends attempts early",
			retry.Backoff{Steps: 10, Duration: time.Second, Factor: 2, Cap: 5 * time.Second}, repeat(errRetriable, 20), 3,
			"attempt 3: retriable", []time.Duration{time.Second, 2 * time.Second}},
		{"cap on the first step: a single attempt",
			retry.Backoff{Steps: 5, Duration: time.Second, Factor: 10, Cap: 5 * time.Second}, repeat(errRetriable, 9), 1,
			"attempt 1: retriable", nil},
		{"steps run out of growth before attempts: last value repeats",
			retry.Backoff{Steps: 3, Duration: ms, Factor: 2}, repeat(errRetriable, 9), 3,
			"attempt 3: retriable", []time.Duration{ms, 2 * ms}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := newInstantClock()
			fn, calls := script(tc.errs...)
			err := retry.OnError(t.Context(), tc.b, isRetriable, fn, retry.WithClock(clock), retry.WithRand(fixedRand(0.5)))
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.wantCalls, *calls, "attempts")
			assert.Equal(t, tc.wantWaits, clock.Waits())

			if tc.b.Cap > 0 {
				return // zeroing the waits below would never reach the cap
			}
			// client-go itself, with waits of zero so it does not sleep.
			zero := tc.b
			zero.Duration, zero.Jitter = 0, 0
			theirFn, theirCalls := script(tc.errs...)
			theirErr := clientretry.OnError(zero.Wait(), isRetriable, theirFn)
			assert.Equal(t, *theirCalls, *calls, "client-go makes as many attempts")
			assert.Equal(t, fmt.Sprint(theirErr), fmt.Sprint(err), "client-go returns the same error")
		})
	}
}

func TestOnErrorNoStepsMakesNoAttempt(t *testing.T) {
	for _, steps := range []int{0, -1} {
		fn, calls := script(errRetriable)
		err := retry.OnError(t.Context(), retry.Backoff{Steps: steps}, isRetriable, fn, retry.WithClock(newInstantClock()))
		assert.ErrorIs(t, err, retry.ErrNoAttempts)
		assert.True(t, wait.Interrupted(err), "like client-go's wait.ErrWaitTimeout")
		assert.Zero(t, *calls)

		theirFn, theirCalls := script(errRetriable)
		assert.True(t, wait.Interrupted(clientretry.OnError(retry.Backoff{Steps: steps}.Wait(), isRetriable, theirFn)))
		assert.Zero(t, *theirCalls)
	}
}

func TestOnErrorDoneContextMakesNoAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	fn, calls := script()
	assert.ErrorIs(t, retry.OnError(ctx, retry.DefaultRetry, isRetriable, fn), context.Canceled)
	assert.Zero(t, *calls)
}

func conflict() error {
	return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "cm", errors.New("the object has been modified"))
}

func TestRetryOnConflict(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   func(error) bool
	}{
		{"conflicts then success", []error{conflict(), conflict()}, 3, func(err error) bool { return err == nil }},
		{"conflict every time: 5 attempts, conflict returned", repeat(conflict(), 9), 5, apierrors.IsConflict},
		{"not found returned at once", []error{apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "cm")}, 1, apierrors.IsNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fn, calls := script(tc.errs...)
			err := retry.RetryOnConflict(t.Context(), retry.DefaultRetry, fn, retry.WithClock(newInstantClock()))
			assert.True(t, tc.wantErr(err), "got %v", err)
			assert.Equal(t, tc.wantCalls, *calls)

			theirFn, theirCalls := script(tc.errs...)
			_ = clientretry.RetryOnConflict(retry.Backoff{Steps: retry.DefaultRetry.Steps}.Wait(), theirFn)
			assert.Equal(t, *theirCalls, *calls, "as client-go")
		})
	}
}

func TestDefaultsMatchClientGo(t *testing.T) {
	assert.Equal(t, clientretry.DefaultRetry, retry.DefaultRetry.Wait())
	assert.Equal(t, clientretry.DefaultBackoff, retry.DefaultBackoff.Wait())
	b, reset := retry.ReflectorBackoff()
	assert.Equal(t, 800*time.Millisecond, b.Duration)
	assert.Equal(t, 2.0, b.Factor)
	assert.Equal(t, 1.0, b.Jitter)
	assert.Equal(t, 30*time.Second, b.Cap)
	assert.Equal(t, 2*time.Minute, reset)
}

func TestOnErrorUsesGlobalRandWithoutWithRand(t *testing.T) {
	clock := newInstantClock()
	fn, _ := script(repeat(errRetriable, 9)...)
	require.Error(t, retry.OnError(t.Context(), retry.DefaultRetry, isRetriable, fn, retry.WithClock(clock)))
	for _, w := range clock.Waits() {
		assert.True(t, w >= 10*time.Millisecond && w < 11*time.Millisecond, "wait %v outside [10ms, 11ms)", w)
	}
}

package clockx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/clockx"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// The pattern benbjohnson/clock's mock fails (1998 of 2000 runs measured):
// another goroutine arms a timer while the test advances time. Waiting for
// the timer to be armed and arming under the same lock as Add make it safe.
func TestSleepArmedByOtherGoroutineAlwaysWakes(t *testing.T) {
	ctx := t.Context()
	for i := range 2000 {
		m := clockx.NewMock(epoch)
		done := make(chan error, 1)
		go func() { done <- clockx.Sleep(ctx, m, 5*time.Second) }()
		require.NoError(t, m.WaitForTimers(ctx, 1))
		m.Add(5 * time.Second)
		select {
		case err := <-done:
			require.NoError(t, err, "iteration %d", i)
		case <-ctx.Done():
			t.Fatalf("iteration %d: sleep never returned", i)
		}
		require.Zero(t, m.Armed())
	}
}

func TestSleepCancelReturnsAtOnceWithoutAdvancing(t *testing.T) {
	m := clockx.NewMock(epoch)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- clockx.Sleep(ctx, m, 30*time.Second) }()
	require.NoError(t, m.WaitForTimers(t.Context(), 1))
	assert.Equal(t, []time.Duration{30 * time.Second}, m.ArmedDurations())

	cancel()
	err := <-done
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Equal(t, epoch, m.Now(), "the mock must not have moved")
	assert.Zero(t, m.Armed(), "the cancelled sleep must stop its timer")
}

func TestSleepOnDoneContextReturnsErrEvenForZero(t *testing.T) {
	m := clockx.NewMock(epoch)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, clockx.Sleep(ctx, m, 0), context.Canceled)
	assert.ErrorIs(t, clockx.Sleep(ctx, m, time.Hour), context.Canceled)
	assert.Zero(t, m.Armed())
	assert.NoError(t, clockx.Sleep(t.Context(), m, 0))
	assert.NoError(t, clockx.Sleep(t.Context(), m, -time.Second))
}

func TestTimersFireInDeadlineOrder(t *testing.T) {
	m := clockx.NewMock(epoch)
	durations := []time.Duration{3 * time.Second, time.Second, 2 * time.Second, time.Second}
	timers := make([]clockx.Timer, len(durations))
	for i, d := range durations {
		timers[i] = m.NewTimer(d)
	}
	assert.Equal(t, 4, m.Armed())
	assert.Equal(t, []time.Duration{time.Second, time.Second, 2 * time.Second, 3 * time.Second}, m.ArmedDurations())

	m.Add(10 * time.Second)
	assert.Zero(t, m.Armed())
	assert.Equal(t, epoch.Add(10*time.Second), m.Now())
	for i, d := range durations {
		select {
		case at := <-timers[i].C():
			assert.Equal(t, epoch.Add(d), at, "timer %d delivers its deadline", i)
		default:
			t.Fatalf("timer %d did not fire", i)
		}
	}
}

// Order is observable through Now: each firing happens at its own deadline,
// and a timer armed for the same instant fires after those armed earlier.
func TestFiringOrderObservedThroughChannels(t *testing.T) {
	m := clockx.NewMock(epoch)
	a := m.NewTimer(2 * time.Second)
	b := m.NewTimer(time.Second)
	c := m.NewTimer(2 * time.Second)
	m.Add(time.Second)
	assertFired(t, b, epoch.Add(time.Second))
	assertPending(t, a)
	assertPending(t, c)
	assert.Equal(t, []time.Duration{time.Second, time.Second}, m.ArmedDurations())
	m.Add(time.Second)
	assertFired(t, a, epoch.Add(2*time.Second))
	assertFired(t, c, epoch.Add(2*time.Second))
}

func TestAddShortOfDeadlineFiresNothing(t *testing.T) {
	m := clockx.NewMock(epoch)
	tm := m.NewTimer(5 * time.Second)
	m.Add(5*time.Second - time.Nanosecond)
	assertPending(t, tm)
	assert.Equal(t, []time.Duration{time.Nanosecond}, m.ArmedDurations())
	m.Add(time.Nanosecond)
	assertFired(t, tm, epoch.Add(5*time.Second))
}

func TestSetForwardFiresBackwardDoesNot(t *testing.T) {
	m := clockx.NewMock(epoch)
	tm := m.NewTimer(time.Minute)
	m.Set(epoch.Add(-time.Hour))
	assertPending(t, tm)
	assert.Equal(t, []time.Duration{time.Hour + time.Minute}, m.ArmedDurations())
	m.Set(epoch.Add(time.Minute))
	assertFired(t, tm, epoch.Add(time.Minute))
	assert.Equal(t, epoch.Add(time.Minute), m.Now())
	assert.Equal(t, time.Minute, m.Since(epoch))
}

func TestStopSemantics(t *testing.T) {
	m := clockx.NewMock(epoch)
	tm := m.NewTimer(time.Second)
	assert.True(t, tm.Stop(), "stopping an armed timer")
	assert.False(t, tm.Stop(), "stopping twice")
	assert.Zero(t, m.Armed())
	m.Add(time.Hour)
	assertPending(t, tm)

	fired := m.NewTimer(time.Second)
	m.Add(time.Second)
	assert.False(t, fired.Stop(), "stopping a fired timer")
	assertPending(t, fired) // Stop discards the undelivered tick
}

func TestResetSemantics(t *testing.T) {
	m := clockx.NewMock(epoch)
	tm := m.NewTimer(time.Second)
	assert.True(t, tm.Reset(5*time.Second), "resetting an armed timer")
	m.Add(time.Second)
	assertPending(t, tm)
	assert.Equal(t, []time.Duration{4 * time.Second}, m.ArmedDurations())
	m.Add(4 * time.Second)
	assertFired(t, tm, epoch.Add(5*time.Second))

	assert.False(t, tm.Reset(time.Second), "resetting a fired timer")
	assert.Equal(t, 1, m.Armed())
	m.Add(time.Second)
	assertFired(t, tm, epoch.Add(6*time.Second))

	tm.Reset(time.Second)
	m.Add(time.Second) // fires at 7s and nobody receives the tick
	assert.False(t, tm.Reset(time.Second), "resetting a fired timer")
	assertPending(t, tm) // Reset dropped the stale 7s tick

	assert.True(t, tm.Stop())
	assert.False(t, tm.Reset(0), "resetting a stopped timer")
	assertFired(t, tm, epoch.Add(7*time.Second))
	assert.Zero(t, m.Armed())
}

func TestZeroDurationTimerFiresAtOnce(t *testing.T) {
	m := clockx.NewMock(epoch)
	assertFired(t, m.NewTimer(0), epoch)
	assertFired(t, m.NewTimer(-time.Second), epoch)
	assert.Zero(t, m.Armed())
}

func TestDeliveryNeverBlocks(t *testing.T) {
	m := clockx.NewMock(epoch)
	tm := m.NewTimer(time.Second)
	m.Add(time.Second)
	tm.Reset(time.Second)
	m.Add(time.Second) // the channel is full only if Reset failed to drain; Add must not block either way
	assertFired(t, tm, epoch.Add(2*time.Second))
}

func TestWaitForTimersHonoursContext(t *testing.T) {
	m := clockx.NewMock(epoch)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, m.WaitForTimers(ctx, 1), context.Canceled)
	assert.NoError(t, m.WaitForTimers(ctx, 0), "already satisfied")
}

func TestWaitForTimersWakesForEachArm(t *testing.T) {
	m := clockx.NewMock(epoch)
	ctx := t.Context()
	const n = 50
	for range n {
		go func() { _ = clockx.Sleep(ctx, m, time.Minute) }()
	}
	require.NoError(t, m.WaitForTimers(ctx, n))
	assert.Equal(t, n, m.Armed())
	m.Add(time.Minute)
	assert.Zero(t, m.Armed())
}

func assertFired(t *testing.T, tm clockx.Timer, want time.Time) {
	t.Helper()
	select {
	case at := <-tm.C():
		assert.Equal(t, want, at)
	default:
		t.Errorf("timer did not fire; want a tick at %v", want)
	}
}

func assertPending(t *testing.T, tm clockx.Timer) {
	t.Helper()
	select {
	case at := <-tm.C():
		t.Errorf("unexpected tick at %v", at)
	default:
	}
}

package transport_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/transport"
)

// tick advances the mock one watchdog step at a time, letting the watchdog look and re-arm in
// between, until total has passed or the watchdog has returned.
func tick(t *testing.T, m *clockx.Mock, step, total time.Duration) {
	t.Helper()
	armed := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		return m.WaitForTimers(ctx, 1) == nil
	}
	for passed := time.Duration(0); passed < total && armed(); passed += step {
		m.Add(step)
	}
	armed() // the last step's look is over
}

func TestSilenceWatchFiresOnceAfterTheBound(t *testing.T) {
	m := clockx.NewMock(time.Unix(0, 0))
	var fired atomic.Int32
	var at atomic.Int64
	w := transport.WatchSilence(m, 8*time.Second, func() { fired.Add(1); at.Store(m.Now().Unix()) })
	defer w.Stop()
	tick(t, m, time.Second, 7*time.Second)
	require.Zero(t, fired.Load(), "silent for 7 s of a bound of 8 s")
	tick(t, m, time.Second, 5*time.Second)
	w.Stop()
	require.Equal(t, int32(1), fired.Load())
	require.Equal(t, int64(8), at.Load(), "noticed at the bound")
}

func TestSilenceWatchFramesKeepItQuiet(t *testing.T) {
	m := clockx.NewMock(time.Unix(0, 0))
	var fired atomic.Int32
	w := transport.WatchSilence(m, 8*time.Second, func() { fired.Add(1) })
	for range 10 {
		tick(t, m, time.Second, 6*time.Second)
		w.Frame()
	}
	w.Stop()
	require.Zero(t, fired.Load(), "a frame every 6 s is no silence for a bound of 8 s")
}

// A silence is measured from the last frame, noticed within an eighth of the bound of it.
func TestSilenceWatchCountsFromTheLastFrame(t *testing.T) {
	m := clockx.NewMock(time.Unix(0, 0))
	var at atomic.Int64
	w := transport.WatchSilence(m, 8*time.Second, func() { at.Store(m.Now().Unix()) })
	defer w.Stop()
	tick(t, m, time.Second, 5*time.Second)
	w.Frame() // arrives between the checks at 5 s and 6 s
	tick(t, m, time.Second, 20*time.Second)
	require.Equal(t, int64(14), at.Load(), "seen at 6 s, silent from then on for 8 s")
}

func TestSilenceWatchOffAndStop(t *testing.T) {
	var off *transport.SilenceWatch = transport.WatchSilence(clockx.Real(), 0, func() { t.Fatal("no bound, no silence") })
	require.Nil(t, off)
	off.Frame()
	off.Stop()

	m := clockx.NewMock(time.Unix(0, 0))
	w := transport.WatchSilence(m, time.Second, func() { t.Error("stopped before the bound") })
	w.Stop()
	w.Stop() // twice is fine
	m.Add(time.Hour)
}

func TestSilentErrorMatchesErrSilent(t *testing.T) {
	var err error = &transport.SilentError{Bound: 90 * time.Second}
	require.ErrorIs(t, err, transport.ErrSilent)
	require.Contains(t, err.Error(), "1m30s")
	require.False(t, errors.Is(errors.New("other"), transport.ErrSilent))
}

package retry_test

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rewatch/rewatch/clockx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// instantClock fires every timer as soon as it is armed and records the
// wait, so table tests and examples see the exact delays without any time
// passing. Cancellation is tested with clockx.Mock instead.
type instantClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newInstantClock() *instantClock { return &instantClock{now: epoch} }

func (c *instantClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *instantClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *instantClock) NewTimer(d time.Duration) clockx.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.waits = append(c.waits, d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

func (c *instantClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time    { return t }
func (firedTimer) Stop() bool               { return false }
func (firedTimer) Reset(time.Duration) bool { return false }

// fixedRand makes every jitter draw the same number.
type fixedRand float64

func (f fixedRand) Float64() float64 { return float64(f) }

package clockx

import (
	"time"

	bclock "github.com/benbjohnson/clock"
	k8sclock "k8s.io/utils/clock"
)

// FromBenbjohnson adapts github.com/benbjohnson/clock, whose timers expose C
// as a field rather than a method.
func FromBenbjohnson(c bclock.Clock) Clock { return benbjohnsonClock{c} }

type benbjohnsonClock struct{ c bclock.Clock }

func (b benbjohnsonClock) Now() time.Time                  { return b.c.Now() }
func (b benbjohnsonClock) Since(t time.Time) time.Duration { return b.c.Since(t) }
func (b benbjohnsonClock) NewTimer(d time.Duration) Timer {
	return benbjohnsonTimer{b.c.Timer(d)}
}

type benbjohnsonTimer struct{ t *bclock.Timer }

func (b benbjohnsonTimer) C() <-chan time.Time        { return b.t.C }
func (b benbjohnsonTimer) Stop() bool                 { return b.t.Stop() }
func (b benbjohnsonTimer) Reset(d time.Duration) bool { return b.t.Reset(d) }

// FromK8s adapts k8s.io/utils/clock. It takes k8sclock.Clock, the narrowest
// interface there with NewTimer, so that client-go's clocks (RealClock,
// testing.FakeClock) and anything wider all fit.
func FromK8s(c k8sclock.Clock) Clock { return k8sClock{c} }

type k8sClock struct{ c k8sclock.Clock }

func (k k8sClock) Now() time.Time                  { return k.c.Now() }
func (k k8sClock) Since(t time.Time) time.Duration { return k.c.Since(t) }

// k8sclock.Timer has exactly Timer's method set, so it needs no wrapper; the
// method exists only because Go has no covariant return types.
func (k k8sClock) NewTimer(d time.Duration) Timer { return k.c.NewTimer(d) }

// A Mock can be handed to code that only reads k8s time. The wider k8s
// interfaces need NewTimer to return k8sclock.Timer, which Go's lack of
// covariant returns rules out without a wrapper.
var _ k8sclock.PassiveClock = (*Mock)(nil)

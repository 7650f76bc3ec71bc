package clockx_test

import (
	"testing"
	"time"

	bclock "github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	k8sclock "k8s.io/utils/clock"
	k8stesting "k8s.io/utils/clock/testing"

	"github.com/rewatch/rewatch/clockx"
)

// benbjohnson's Mock.Add sleeps on the real clock, so only the calls that do
// not advance it are exercised here.
func TestFromBenbjohnson(t *testing.T) {
	bm := bclock.NewMock()
	bm.Set(epoch)
	c := clockx.FromBenbjohnson(bm)
	assert.Equal(t, epoch, c.Now())
	assert.Equal(t, time.Hour, c.Since(epoch.Add(-time.Hour)))

	tm := c.NewTimer(time.Minute)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	assert.False(t, tm.Reset(time.Minute))
	assert.True(t, tm.Reset(time.Minute))
	assert.True(t, tm.Stop())
}

func TestFromK8s(t *testing.T) {
	fc := k8stesting.NewFakeClock(epoch)
	c := clockx.FromK8s(fc)
	assert.Equal(t, epoch, c.Now())
	assert.Equal(t, time.Hour, c.Since(epoch.Add(-time.Hour)))

	tm := c.NewTimer(time.Minute)
	assertPending(t, tm)
	fc.Step(time.Minute)
	assertFired(t, tm, epoch.Add(time.Minute))
	assert.False(t, tm.Stop())
	tm.Reset(time.Second)
	assert.True(t, tm.Stop())

	var _ k8sclock.Clock = k8sclock.RealClock{}
	_ = clockx.FromK8s(k8sclock.RealClock{})
}

// The wall clock is checked only for shape: a zero timer fires without any
// sleeping in the test, and stopping a long one reports it was armed.
func TestReal(t *testing.T) {
	c := clockx.Real()
	before := time.Now()
	assert.False(t, c.Now().Before(before))
	assert.GreaterOrEqual(t, c.Since(before), time.Duration(0))
	<-c.NewTimer(0).C()
	long := c.NewTimer(time.Hour)
	assert.True(t, long.Stop())
	assert.False(t, long.Reset(time.Hour), "reset after Stop")
	assert.True(t, long.Stop())
}

package backoff_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rewatch/rewatch/backoff"
)

// fixed is a Source that always returns the same number.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

// Configurations pinned against apimachinery wait.Backoff.Step with Jitter 0,
// where its results are deterministic.
var waitConfigs = []struct {
	name string
	b    backoff.Backoff
}{
	{"client-go DefaultRetry shape", backoff.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 5}},
	{"client-go DefaultBackoff shape", backoff.Backoff{Duration: 10 * time.Millisecond, Factor: 5, Steps: 4}},
	{"reflector shape", backoff.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Steps: 38, Cap: 30 * time.Second}},
	{"cap reached before steps", backoff.Backoff{Duration: time.Second, Factor: 3, Steps: 10, Cap: 20 * time.Second}},
	{"steps run out before cap", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 3, Cap: time.Hour}},
	{"cap exactly hit is not exceeded", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 10, Cap: 4 * time.Second}},
	{"duration above cap from the start", backoff.Backoff{Duration: time.Minute, Factor: 2, Steps: 5, Cap: time.Second}},
	{"duration above cap, no steps: cap ignored", backoff.Backoff{Duration: time.Minute, Factor: 2, Steps: 0, Cap: time.Second}},
	{"steps zero keeps duration", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 0}},
	{"steps negative keeps duration", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: -3}},
	{"factor zero keeps duration", backoff.Backoff{Duration: time.Second, Factor: 0, Steps: 5, Cap: time.Millisecond}},
	{"factor one", backoff.Backoff{Duration: 7 * time.Millisecond, Factor: 1, Steps: 100}},
	{"factor below one shrinks", backoff.Backoff{Duration: time.Second, Factor: 0.5, Steps: 40}},
	{"fractional factor truncates", backoff.Backoff{Duration: 3, Factor: 1.5, Steps: 20}},
	{"zero duration", backoff.Backoff{Duration: 0, Factor: 2, Steps: 5}},
	{"no cap, few steps", backoff.Backoff{Duration: time.Millisecond, Factor: 10, Steps: 6}},
	{"one step", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 1}},
}

func TestStepMatchesWaitBackoff(t *testing.T) {
	for _, tc := range waitConfigs {
		t.Run(tc.name, func(t *testing.T) {
			ours, theirs := tc.b, tc.b.Wait()
			for i := range 50 {
				want := theirs.Step()
				require.Equal(t, want, ours.Step(fixed(0.9)), "step %d", i)
				require.Equal(t, want, tc.b.Delay(i, 0.9), "Delay(%d)", i)
				require.Equal(t, backoff.FromWait(theirs), ours, "state after step %d", i)
			}
		})
	}
}

func TestStepSequences(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		b    backoff.Backoff
		want []time.Duration
	}{
		// Steps counts changes of the base delay, so DefaultBackoff's
		// Steps 4 still yields a 5th distinct value once exhausted.
		{"DefaultBackoff", backoff.Backoff{Duration: 10 * ms, Factor: 5, Steps: 4},
			[]time.Duration{10 * ms, 50 * ms, 250 * ms, 1250 * ms, 6250 * ms, 6250 * ms}},
		{"cap sets steps to zero", backoff.Backoff{Duration: time.Second, Factor: 3, Steps: 10, Cap: 5 * time.Second},
			[]time.Duration{time.Second, 3 * time.Second, 5 * time.Second, 5 * time.Second}},
		{"reflector without jitter", backoff.Reflector(),
			[]time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}},
		{"Steps < 1 keeps returning Duration", backoff.Backoff{Duration: time.Second, Factor: 2},
			[]time.Duration{time.Second, time.Second, time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			for i, want := range tc.want {
				assert.Equal(t, want, b.Step(fixed(0)), "step %d", i)
				assert.Equal(t, want, tc.b.Delay(i, 0), "Delay(%d)", i)
			}
		})
	}
}

func TestJitterIsDurationPlusRTimesJitterTimesDuration(t *testing.T) {
	b := backoff.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.5, Steps: 3}
	assert.Equal(t, 1250*time.Millisecond, b.Step(fixed(0.5)))
	assert.Equal(t, 2*time.Second, b.Step(fixed(0)), "jitter never feeds back into Duration")
	assert.Equal(t, 4*time.Second+999999999, b.Step(fixed(0.4999999999)))
	assert.Equal(t, 8*time.Second, b.Duration)
}

// A deterministic Source is only consumed when there is jitter to draw,
// as wait.Jitter only calls rand when jitter > 0.
func TestStepDrawsOnlyWithJitter(t *testing.T) {
	src := &counting{}
	b := backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 3}
	b.Step(src)
	assert.Zero(t, src.n)
	b.Jitter = 0.1
	b.Step(src)
	assert.Equal(t, 1, src.n)
}

type counting struct{ n int }

func (c *counting) Float64() float64 { c.n++; return 0.5 }

func TestStepNilSourceStaysInBounds(t *testing.T) {
	b := backoff.Reflector()
	for i := range 20 {
		lo, hi := backoff.Reflector().Bounds(i)
		d := b.Step(nil)
		assert.True(t, lo <= d && d < hi, "step %d: %v not in [%v,%v)", i, d, lo, hi)
	}
}

func TestReflectorBounds(t *testing.T) {
	r := backoff.Reflector()
	d := 800 * time.Millisecond
	for i := range 6 {
		lo, hi := r.Bounds(i)
		assert.Equal(t, d, lo, "attempt %d", i)
		assert.Equal(t, 2*d, hi, "attempt %d: [d, 2d)", i)
		d *= 2
	}
	for _, a := range []int{6, 7, 100, math.MaxInt} {
		lo, hi := r.Bounds(a)
		assert.Equal(t, 30*time.Second, lo)
		assert.Equal(t, 60*time.Second, hi)
	}
	assert.Equal(t, 2*time.Minute, backoff.ReflectorResetAfter)
}

func TestHugeAttemptsDoNotOverflowOrHang(t *testing.T) {
	huge := []int{math.MaxInt, math.MaxInt - 1, 1 << 40}
	tests := []struct {
		name string
		b    backoff.Backoff
		want time.Duration
	}{
		{"reflector", backoff.Reflector(), 30 * time.Second},
		{"doubling, no cap, unlimited steps", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt}, math.MaxInt64},
		{"factor 1", backoff.Backoff{Duration: time.Second, Factor: 1, Steps: math.MaxInt}, time.Second},
		{"factor 0", backoff.Backoff{Duration: time.Second, Steps: math.MaxInt}, time.Second},
		{"halving", backoff.Backoff{Duration: time.Hour, Factor: 0.5, Steps: math.MaxInt}, 0},
		{"steps exhausted", backoff.Backoff{Duration: time.Second, Factor: 2, Steps: 3}, 8 * time.Second},
		{"huge duration and factor", backoff.Backoff{Duration: math.MaxInt64, Factor: 1e300, Steps: math.MaxInt}, math.MaxInt64},
	}
	for _, tc := range tests {
		for _, a := range huge {
			assert.Equal(t, tc.want, tc.b.Delay(a, 0), "%s, attempt %d", tc.name, a)
			d := tc.b.Delay(a, math.Nextafter(1, 0))
			assert.GreaterOrEqual(t, d, tc.want, "%s: jitter must not wrap around", tc.name)
		}
	}
	withJitter := backoff.Backoff{Duration: math.MaxInt64 / 2, Factor: 2, Jitter: 5, Steps: math.MaxInt}
	assert.Equal(t, time.Duration(math.MaxInt64), withJitter.Delay(math.MaxInt, 0.99))
}

// A negative Factor without a Cap is nonsense wait.Backoff does not forbid;
// it ends alternating between the two saturated values, and Delay must
// still agree with stepping and still be cheap for huge attempts.
func TestNegativeFactorAlternation(t *testing.T) {
	b := backoff.Backoff{Duration: time.Second, Factor: -3, Steps: math.MaxInt}
	s := b
	for i := range 200 {
		require.Equal(t, s.Step(fixed(0)), b.Delay(i, 0), "attempt %d", i)
	}
	assert.Contains(t, []time.Duration{math.MaxInt64, math.MinInt64}, b.Delay(math.MaxInt, 0))
	assert.NotEqual(t, b.Delay(math.MaxInt, 0), b.Delay(math.MaxInt-1, 0))
	assert.Equal(t, b.Delay(198, 0), b.Delay(math.MaxInt-1, 0), "parity: MaxInt-1 is even")
}

func TestNegativeAttemptIsFirst(t *testing.T) {
	b := backoff.Reflector()
	assert.Equal(t, b.Delay(0, 0.3), b.Delay(-5, 0.3))
}

func TestWaitConversionRoundTrips(t *testing.T) {
	w := wait.Backoff{Duration: 3 * time.Second, Factor: 1.5, Jitter: 0.2, Steps: 7, Cap: time.Minute}
	assert.Equal(t, w, backoff.FromWait(w).Wait())
	b := backoff.Reflector()
	assert.Equal(t, b, backoff.FromWait(b.Wait()))
}

func TestDelayAllocatesNothing(t *testing.T) {
	b := backoff.Reflector()
	var p backoff.Policy = b
	allocs := testing.AllocsPerRun(1000, func() {
		_ = b.Delay(12, 0.5)
		_ = p.Delay(3, 0.1)
		_, _ = b.Bounds(4)
	})
	assert.Zero(t, allocs)
}

func BenchmarkDelay(b *testing.B) {
	r := backoff.Reflector()
	b.ReportAllocs()
	var sink time.Duration
	for i := 0; b.Loop(); i++ {
		sink += r.Delay(i&15, 0.5)
	}
	_ = sink
}

func BenchmarkDelayHugeAttempt(b *testing.B) {
	r := backoff.Backoff{Duration: time.Millisecond, Factor: 1.5, Jitter: 0.1, Steps: math.MaxInt}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Delay(math.MaxInt, 0.5)
	}
}

package fsm_test

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/backoff"
)

// backoff/ properties: Delay, Bounds and Step agree with each other and with apimachinery's
// wait.Backoff for every configuration.

// genBackoff draws any configuration, including the degenerate ones
// (negative steps, zero or fractional factors, no cap) wait.Backoff allows.
func genBackoff(t *rapid.T) backoff.Backoff {
	return backoff.Backoff{
		Duration: time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "duration")),
		Factor:   rapid.SampledFrom([]float64{0, 0.5, 1, 1.5, 2, 3, 5, 10}).Draw(t, "factor"),
		Jitter:   rapid.SampledFrom([]float64{-1, 0, 0.1, 0.5, 1, 2}).Draw(t, "jitter"),
		Steps:    rapid.IntRange(-2, 60).Draw(t, "steps"),
		Cap:      time.Duration(rapid.Int64Range(0, int64(24*time.Hour)).Draw(t, "cap")),
	}
}

// Delay(a, r) is the (a+1)-th Step of a fresh copy with r as that step's
// draw, whatever the earlier draws were.
func TestPropDelayEqualsStepping(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		attempt := rapid.IntRange(0, 80).Draw(t, "attempt")
		r := rapid.Float64Range(0, math.Nextafter(1, 0)).Draw(t, "r")
		s := b
		for range attempt {
			s.Step(fixed(rapid.Float64Range(0, 0.999).Draw(t, "earlier")))
		}
		if got, want := b.Delay(attempt, r), s.Step(fixed(r)); got != want {
			t.Fatalf("Delay(%d, %v) = %v, stepping gives %v", attempt, r, got, want)
		}
	})
}

// Against apimachinery itself, jitter off (its randomness is global), over
// configurations whose values stay far from overflow, where its behaviour
// is defined.
func TestPropDelayEqualsWaitBackoff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		b.Jitter = 0
		w := b.Wait()
		for a := range rapid.IntRange(0, 60).Draw(t, "attempts") {
			want := w.Step()
			if want > time.Duration(math.MaxInt64/4) || want < 0 {
				// Near or past overflow (a negative value is wait.Backoff's conversion having
				// wrapped), where apimachinery's result is implementation-defined.
				return
			}
			if got := b.Delay(a, rapid.Float64Range(0, 0.999).Draw(t, "r")); got != want {
				t.Fatalf("Delay(%d) = %v, wait.Backoff.Step gives %v", a, got, want)
			}
		}
	})
}

func TestPropBoundsContainDelay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		attempt := rapid.IntRange(-1, 100).Draw(t, "attempt")
		r := rapid.Float64Range(0, math.Nextafter(1, 0)).Draw(t, "r")
		lo, hi := b.Bounds(attempt)
		d := b.Delay(attempt, r)
		if saturated := hi == math.MaxInt64; d < lo || d > hi || (d == hi && !saturated) {
			t.Fatalf("Delay(%d, %v) = %v outside [%v, %v)", attempt, r, d, lo, hi)
		}
		if b.Jitter <= 0 && hi-lo != 1 && hi != math.MaxInt64 {
			t.Fatalf("without jitter the range is one value, got [%v, %v)", lo, hi)
		}
	})
}

// Huge attempts agree with the value reached once the base delay settles.
func TestPropHugeAttemptMatchesSettled(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBackoff(t)
		r := rapid.Float64Range(0, 0.999).Draw(t, "r")
		settled := b.Delay(200, r) // every generated config settles within 200 steps
		if got := b.Delay(math.MaxInt, r); got != settled {
			t.Fatalf("Delay(MaxInt) = %v, settled value %v", got, settled)
		}
	})
}

// fixed is a backoff.Source that always returns the same number.
type fixed float64

func (f fixed) Float64() float64 { return float64(f) }

package backoff

import (
	"math"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Backoff has the fields and semantics of apimachinery's wait.Backoff.
type Backoff struct {
	// Duration is the current base delay, before jitter.
	Duration time.Duration
	// Factor multiplies Duration after each Step while Steps remain; 0 keeps
	// Duration as it is.
	Factor float64
	// Jitter adds up to Jitter*Duration, uniformly, to each delay; <= 0 adds none.
	Jitter float64
	// Steps is how many more times Duration may change. Below 1, Step keeps
	// returning the (jittered) Duration.
	Steps int
	// Cap, when positive, bounds Duration: the step that would exceed it sets
	// Duration to Cap and Steps to 0.
	Cap time.Duration
}

// Source is uniform randomness in [0, 1); *math/rand/v2.Rand satisfies it.
type Source interface{ Float64() float64 }

// Policy is any backoff the reflector can be given: the delay before retry
// number attempt (from 0), given one uniform random number r in [0, 1).
type Policy interface {
	Delay(attempt int, r float64) time.Duration
}

var _ Policy = Backoff{}

// Step returns the current delay, jittered as Duration + r*Jitter*Duration,
// and advances b exactly as wait.Backoff.Step does. A random number is drawn
// from src only when Jitter > 0; a nil src draws from math/rand/v2's global
// source, which only the retry helpers should rely on.
//
// The one deliberate difference from wait.Backoff: where its float-to-int
// conversions would overflow (results beyond ~292 years), which Go leaves
// implementation-defined, Step saturates at the largest Duration instead.
func (b *Backoff) Step(src Source) time.Duration {
	var r float64
	if b.Jitter > 0 {
		if src == nil {
			r = rand.Float64()
		} else {
			r = src.Float64()
		}
	}
	d := jitter(b.Duration, b.Jitter, r)
	if b.Steps < 1 {
		b.Steps = 0 // as wait.Backoff does, normalising negative Steps
		return d
	}
	b.Duration, b.Steps = b.advance(b.Duration, b.Steps)
	return d
}

// Delay is the value the (attempt+1)-th call of Step would return on a fresh
// copy of b, with r as that call's random number (earlier calls' random
// numbers do not affect the state). It is pure and allocation-free, and it
// stops iterating as soon as the base delay can no longer change (capped,
// steps exhausted, a fixed point such as Factor 0 or 1, or saturation), so
// huge attempt numbers are cheap. Only a Factor within about 1e-6 of 1 with
// no Cap and huge Steps makes it walk many steps. A negative attempt counts
// as 0.
func (b Backoff) Delay(attempt int, r float64) time.Duration {
	d, steps := b.Duration, b.Steps
	n := min(max(attempt, 0), max(steps, 0))
	prev, havePrev := time.Duration(0), false
	for i := range n {
		next, left := b.advance(d, steps)
		if left == 0 {
			// Either capped or out of steps: nothing changes after this.
			d = next
			break
		}
		if next == d {
			break
		}
		if havePrev && next == prev {
			// A negative Factor without Cap ends up alternating between two
			// saturated values; the rest follows from parity.
			if (n-i-1)%2 == 1 {
				next = d
			}
			d = next
			break
		}
		prev, havePrev = d, true
		d, steps = next, left
	}
	return jitter(d, b.Jitter, r)
}

// Bounds returns the half-open range [lo, hi) that Delay(attempt, r) covers
// as r ranges over [0, 1). It is exact, not the nominal [d, d+Jitter*d):
// float rounding can, for large durations, reach d+Jitter*d itself. When the
// delay saturates at the largest Duration, hi is that value and inclusive,
// since nothing lies above it.
func (b Backoff) Bounds(attempt int) (lo, hi time.Duration) {
	a := b.Delay(attempt, 0)
	z := b.Delay(attempt, math.Nextafter(1, 0))
	lo, hi = min(a, z), max(a, z)
	if hi < math.MaxInt64 {
		hi++
	}
	return lo, hi
}

// advance is one change of the base delay, wait.Backoff's rule; steps >= 1.
func (b Backoff) advance(d time.Duration, steps int) (time.Duration, int) {
	steps--
	if b.Factor == 0 {
		return d, steps
	}
	next := scale(d, b.Factor)
	if b.Cap > 0 && next > b.Cap {
		return b.Cap, 0
	}
	return next, steps
}

// jitter mirrors wait.Jitter, including its order of float operations, so
// that results match to the nanosecond.
func jitter(d time.Duration, j, r float64) time.Duration {
	if j <= 0 {
		return d
	}
	return addSat(d, toDuration(r*j*float64(d)))
}

func scale(d time.Duration, f float64) time.Duration { return toDuration(float64(d) * f) }

// toDuration truncates like a Go conversion but saturates instead of
// producing an implementation-defined value; NaN saturates high.
func toDuration(x float64) time.Duration {
	switch {
	case !(x < math.MaxInt64): // 2^63 exactly, and NaN
		return math.MaxInt64
	case x < math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(x)
}

func addSat(a, b time.Duration) time.Duration {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// FromWait converts an apimachinery backoff.
func FromWait(w wait.Backoff) Backoff {
	return Backoff{Duration: w.Duration, Factor: w.Factor, Jitter: w.Jitter, Steps: w.Steps, Cap: w.Cap}
}

// Wait converts to an apimachinery backoff.
func (b Backoff) Wait() wait.Backoff {
	return wait.Backoff{Duration: b.Duration, Factor: b.Factor, Jitter: b.Jitter, Steps: b.Steps, Cap: b.Cap}
}

package backoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewatch/rewatch/backoff"
)

// The first SplitMix64 output from state 0 is 0xe220a8397b1dcdaf in Vigna's
// reference implementation; its top 53 bits make the float.
func TestSplitMix64ReferenceValue(t *testing.T) {
	f, next := backoff.SplitMix64(0).Next()
	assert.Equal(t, float64(uint64(0xe220a8397b1dcdaf)>>11)*0x1p-53, f)
	assert.Equal(t, backoff.SplitMix64(0x9e3779b97f4a7c15), next)
}

func TestSplitMix64IsDeterministic(t *testing.T) {
	a, b := backoff.SplitMix64(42), backoff.SplitMix64(42)
	for range 100 {
		var x, y float64
		x, a = a.Next()
		y, b = b.Next()
		assert.Equal(t, x, y)
	}
	x, _ := backoff.SplitMix64(42).Next()
	y, _ := backoff.SplitMix64(43).Next()
	assert.NotEqual(t, x, y)
}

func TestSplitMix64Distribution(t *testing.T) {
	const n, buckets = 200_000, 10
	var counts [buckets]int
	var sum float64
	s := backoff.SplitMix64(7)
	for range n {
		var f float64
		f, s = s.Next()
		if f < 0 || f >= 1 {
			t.Fatalf("out of [0,1): %v", f)
		}
		sum += f
		counts[int(f*buckets)]++
	}
	assert.InDelta(t, 0.5, sum/n, 0.005)
	for i, c := range counts {
		assert.InDelta(t, n/buckets, c, n/buckets*0.03, "bucket %d", i)
	}
}

func TestSplitMix64NextAllocatesNothing(t *testing.T) {
	s := backoff.SplitMix64(1)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, s = s.Next() }))
}

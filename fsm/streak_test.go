package fsm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A streak counts in a row until one of the moments it names passes, and no other moment ends
// it; counted again after that, it starts from one.
func TestAStreakEndsAtItsMomentsOnly(t *testing.T) {
	var m Moments
	var k Streak
	assert.Zero(t, k.Count(&m), "the zero streak")
	k.Add(&m, AtOpen|AtListing)
	k.Add(&m, AtOpen|AtListing)
	assert.Equal(t, 2, k.Count(&m))

	m.Frames++
	m.Progress++
	assert.Equal(t, 2, k.Count(&m), "frames and progress end another streak")

	m.Listings++
	assert.Zero(t, k.Count(&m), "a listing ends it")
	k.Add(&m, AtOpen|AtListing)
	assert.Equal(t, 1, k.Count(&m), "counted again, it starts afresh")

	m.Opened++
	assert.Zero(t, k.Count(&m), "a stream opened ends it")

	k.Add(&m, AtFrame)
	k.End()
	assert.Zero(t, k.Count(&m), "ended by its rule")
	assert.Equal(t, Streak{}, k)
}

// Every moment ends the streaks that name it, alone or with others.
func TestEveryMomentEndsItsStreaks(t *testing.T) {
	moments := map[MomentSet]func(*Moments){
		AtOpen: func(m *Moments) { m.Opened++ }, AtFrame: func(m *Moments) { m.Frames++ },
		AtProgress: func(m *Moments) { m.Progress++ }, AtListing: func(m *Moments) { m.Listings++ },
	}
	for at, pass := range moments {
		for set := MomentSet(1); set < AtListing<<1; set++ {
			var m Moments
			var k Streak
			k.Add(&m, set)
			pass(&m)
			assert.Equal(t, set&at != 0, k.Count(&m) == 0, "a streak that ends at %04b, after moment %04b", set, at)
		}
	}
}

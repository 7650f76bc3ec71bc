package fsm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The relist history remembers the last RelistsKept beginnings, newest first, and says when it
// cannot reach back as far as asked.
func TestRelistHistoryRemembersTheLastRelists(t *testing.T) {
	var h RelistHistory
	_, ok := h.Recent(0)
	assert.False(t, ok, "no relist yet")
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Minute) }
	for i := range RelistsKept + 3 {
		h.Note(at(i))
		last, ok := h.Recent(0)
		require.True(t, ok)
		assert.Equal(t, at(i), last)
	}
	assert.Equal(t, RelistsKept+3, h.Count)
	for k := range RelistsKept {
		got, ok := h.Recent(k)
		require.True(t, ok, "k=%d", k)
		assert.Equal(t, at(RelistsKept+2-k), got, "k=%d", k)
	}
	_, ok = h.Recent(RelistsKept)
	assert.False(t, ok, "older than the ring")
	_, ok = h.Recent(-1)
	assert.False(t, ok)

	var few RelistHistory
	few.Note(t0)
	few.Note(at(1))
	_, ok = few.Recent(2)
	assert.False(t, ok, "only two relists so far")
	first, _ := few.Recent(1)
	assert.Equal(t, t0, first)

	// A snapshot copied is a value: noting a relist in the copy leaves the original alone.
	s := Snapshot{Relists: few}
	c := s
	c.Relists.Note(at(2))
	assert.Equal(t, 2, s.Relists.Count)
	last, _ := s.Relists.Recent(0)
	assert.Equal(t, at(1), last)
}

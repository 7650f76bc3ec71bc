package diagrams

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// The overview is the table regrouped: every row on exactly one edge, the edge of its pair of
// states, and one edge per pair.
func TestOverviewHoldsEveryRowOnce(t *testing.T) {
	seen := map[fsm.Transition]int{}
	pairs := map[[2]fsm.State]bool{}
	for _, e := range Overview() {
		k := [2]fsm.State{e.From, e.To}
		assert.False(t, pairs[k], "two edges %s → %s", e.From, e.To)
		pairs[k] = true
		for _, row := range e.Rows {
			assert.Equal(t, k, [2]fsm.State{row.From, row.To}, "row %s on the wrong edge", row.Cause)
			assert.Contains(t, e.Meanings, Meaning(row))
			seen[row]++
		}
	}
	for _, row := range transitions.Table.Rows() {
		assert.Equal(t, 1, seen[row], "row %s --%s--> %s", row.From, row.Cause, row.To)
	}
}

// Only the timer rows (one into each state Backoff resumes) and the stops keep their own label: every other
// row falls into a group, so the overview says in a few phrases what the table's rows do.
func TestOverviewGroupsEveryRowButTheTimers(t *testing.T) {
	meanings := map[string]bool{}
	for _, row := range transitions.Table.Rows() {
		m := Meaning(row)
		meanings[m] = true
		if row.To == fsm.Stopped {
			assert.Equal(t, "stop", m)
			continue
		}
		if row.From == fsm.Backoff {
			assert.Equal(t, transitions.Table.Label(row.Cause), m)
			continue
		}
		assert.NotEqual(t, transitions.Table.Label(row.Cause), m, "row %s --%s--> %s is in no group", row.From, row.Cause, row.To)
	}
	assert.Less(t, len(meanings), len(transitions.Table.Rows())/3, "the overview should say the table in far fewer phrases than rows")
}

// What a reader learns from the overview must be true of the rows: a row grouped as "no LIST"
// avoids a LIST, one grouped as a relist begins one.
func TestOverviewMeaningsAgreeWithTheFacts(t *testing.T) {
	for _, row := range transitions.Table.Rows() {
		switch m := Meaning(row); {
		case row.BeginsRelist(), transitions.Table.Facts(row.Cause).HoldsRelist:
			assert.Contains(t, m, "relist", "row %s", row.Cause)
		case row.From == fsm.Watching && row.To != fsm.Stopped && transitions.Table.Facts(row.Cause).Retry:
			assert.Contains(t, m, "no LIST", "row %s", row.Cause)
			assert.True(t, transitions.Table.Facts(row.Cause).AvoidsList.Avoids(false) || transitions.Table.Facts(row.Cause).AvoidsList.Avoids(true), "row %s", row.Cause)
		}
	}
}

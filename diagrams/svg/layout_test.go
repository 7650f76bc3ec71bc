package svg

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/diagrams"
)

// A diagram goes into people's documentation: no label may sit on another label or on a node,
// in either view. The boxes are dot's own, measured with the layout font's metrics, which are
// wider than any face the SVG falls back to.
func TestNoLabelOverlapsAnotherOrANode(t *testing.T) {
	for view, dot := range map[string]string{"full": diagrams.DOT(), "overview": diagrams.OverviewDOT()} {
		t.Run(view, func(t *testing.T) {
			l, err := LayOut(context.Background(), []byte(dot))
			require.NoError(t, err)
			require.Len(t, l.Nodes, 6, "five states and the start point")
			assert.NotEmpty(t, l.Labels)
			assert.Empty(t, l.Overlaps())
		})
	}
}

// Every edge of the full diagram and of the overview has its label laid out: a label that dot
// dropped would not overlap anything, and the test above would pass for the wrong reason.
func TestLayoutPlacesEveryLabel(t *testing.T) {
	full, err := LayOut(context.Background(), []byte(diagrams.DOT()))
	require.NoError(t, err)
	pairs := map[string]bool{}
	for _, e := range diagrams.Overview() {
		pairs[e.From.String()+" -> "+e.To.String()] = true
	}
	assert.Len(t, full.Labels, len(pairs), "the full diagram draws one labelled edge per pair of states, its rows as lines")
	overview, err := LayOut(context.Background(), []byte(diagrams.OverviewDOT()))
	require.NoError(t, err)
	assert.Len(t, overview.Labels, len(pairs))
	for _, l := range overview.Labels {
		assert.True(t, pairs[l.Name], "label on %s, which is no pair of the table", l.Name)
	}
}

func TestOverlapsFindsWhatOverlaps(t *testing.T) {
	l := Layout{
		Nodes: []Placed{{Name: "A", Box: Box{0, 0, 10, 10}}},
		Labels: []Placed{
			{Name: "A -> A", Box: Box{5, 5, 20, 20}},   // on A
			{Name: "A -> B", Box: Box{15, 15, 30, 30}}, // on the label above
			{Name: "B -> A", Box: Box{30, 0, 40, 10}},  // touches the one above at a corner: no overlap
		},
	}
	assert.Equal(t, []string{
		"label of A -> A [5,5–20,20] overlaps label of A -> B [15,15–30,30]",
		"label of A -> A [5,5–20,20] overlaps node A [0,0–10,10]",
	}, l.Overlaps())
}

package raster

import (
	"fmt"
	"image"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// A label drawn with a rune the Go fonts lack would show an empty box (go-graphviz's PNG drew
// ⇒ so): every rune of every label is in the font or drawn as strokes (drawnRunes).
func TestEveryLabelRuneIsDrawable(t *testing.T) {
	var texts []string
	for _, s := range fsm.States() {
		texts = append(texts, s.String())
	}
	for _, row := range transitions.Table.Rows() {
		texts = append(texts, diagrams.EdgeLabel(row))
	}
	for _, e := range diagrams.Overview() {
		texts = append(texts, e.Meanings...)
	}
	texts = append(texts, "Reentry") // stateless's heading over a self-loop's rows
	for _, s := range texts {
		for _, r := range s {
			ok, err := hasGlyph(r)
			require.NoError(t, err)
			_, drawn := drawnRunes[r]
			assert.True(t, ok || drawn, "%q in %q: neither in the Go fonts nor drawn as strokes", r, s)
		}
	}
}

func TestRasterizeRefusesWhatItCannotDraw(t *testing.T) {
	doc := func(body string) []byte {
		return []byte(`<svg viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg"><g transform="translate(0 10)">` + body + `</g></svg>`)
	}
	for name, c := range map[string]struct {
		doc  []byte
		want string
	}{
		"an element Graphviz does not write": {doc(`<rect x="0" y="0" width="5" height="5"/>`), "<rect> is not an element"},
		"a relative path command":            {doc(`<path d="m1,1 l2,2"/>`), "relative command"},
		"a path with a missing number":       {doc(`<path d="M1,1C2,2 3,3"/>`), "groups of 6"},
		"a point that is no number":          {doc(`<polygon points="1,1 2,x 3,3"/>`), "pairs of numbers"},
		"a rotation":                         {doc(`<g transform="rotate(90)"></g>`), "rotate(0)"},
		"a colour it does not know":          {doc(`<polygon fill="chartreuse" points="1,1 2,2 3,1"/>`), `colour "chartreuse"`},
		"no viewBox":                         {[]byte(`<svg></svg>`), "viewBox"},
		"a canvas too large":                 {[]byte(`<svg viewBox="0 0 100000 100000"></svg>`), "too large"},
		"no svg at all":                      {[]byte(`<html></html>`), "before <svg>"},
		"cut short":                          {[]byte(`<svg viewBox="0 0 10 10"><g>`), "read SVG"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Rasterize(c.doc, 1)
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err := Rasterize(doc(""), 0)
	assert.ErrorContains(t, err, "scale")
}

// The drawing itself, on a shape small enough to check pixel by pixel: an unfilled path is a
// line, not an area, and a filled polygon is an area.
func TestRasterizeStrokesAndFills(t *testing.T) {
	img, err := Rasterize([]byte(`<svg viewBox="0 0 100 100">
<g class="graph" transform="scale(1 1) rotate(0) translate(0 100)">
<polygon fill="white" stroke="none" points="0,0 0,-100 100,-100 100,0 0,0"/>
<path fill="none" stroke="black" d="M10,-10C10,-90 90,-90 90,-10"/>
<polygon fill="black" stroke="black" points="40,-20 60,-20 60,-40 40,-40 40,-20"/>
</g></svg>`), 1)
	require.NoError(t, err)
	at := func(x, y int) string {
		c, _, _, _ := img.At(x, y).RGBA()
		return fmt.Sprint(c < 0x8000)
	}
	assert.Equal(t, "true", at(50, 70), "inside the filled square")
	assert.Equal(t, "false", at(50, 45), "under the arc, outside the square: an unfilled path leaves it white")
	assert.Equal(t, "false", at(5, 5), "the corner")
	assert.True(t, hasInk(img, image.Rect(0, 25, 100, 35)), "the arc's top")
}

// hasInk reports whether any pixel of r is darker than mid-grey over white paper.
func hasInk(img image.Image, r image.Rectangle) bool {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c, _, _, a := img.At(x, y).RGBA()
			if c+(0xffff-a) < 0x8000 {
				return true
			}
		}
	}
	return false
}

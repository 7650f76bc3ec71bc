package svg

import (
	"context"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// The committed diagrams are read on GitHub without running anything, so they must be what the
// table renders today. They are compared byte for byte: the Graphviz inside go-graphviz is
// wasm with built-in font metrics, so its layout does not depend on the machine, and two
// renders of the same DOT have been identical. A go-graphviz upgrade that changes the drawing
// fails here, and regenerating is then the right fix.
func TestCommittedDiagramsMatchTable(t *testing.T) {
	for _, c := range Committed {
		t.Run(c.File, func(t *testing.T) {
			path := filepath.Join("..", "..", "docs", c.File)
			committed, err := os.ReadFile(path)
			require.NoError(t, err, "%s is missing: run `go generate ./diagrams/`", path)
			want, err := rendered(c.View, c.Format)
			require.NoError(t, err)
			if string(committed) != string(want) {
				t.Fatalf("%s is stale: it no longer matches fsm.Table. Run `go generate ./diagrams/` and commit docs/", path)
			}
		})
	}
}

// rendered renders each view and format once for every test that only reads it: under -race
// a wasm render takes seconds.
func rendered(view, format string) ([]byte, error) {
	return renders(view + "/" + format)()
}

var (
	rendersMu sync.Mutex
	rendersBy = map[string]func() ([]byte, error){}
)

func renders(key string) func() ([]byte, error) {
	rendersMu.Lock()
	defer rendersMu.Unlock()
	if f, ok := rendersBy[key]; ok {
		return f
	}
	view, format, _ := strings.Cut(key, "/")
	f := sync.OnceValues(func() ([]byte, error) { return Render(context.Background(), view, format) })
	rendersBy[key] = f
	return f
}

func TestRenderCoversEveryViewAndFormat(t *testing.T) {
	for _, format := range Formats {
		if format == "png" {
			continue // the SVG drawn: TestPNGIsTheSVGDrawnAtItsScale, TestPNGMatchesRsvgConvert
		}
		b, err := rendered("full", format)
		require.NoError(t, err, format)
		require.NotEmpty(t, b, format)
	}
	for _, format := range []string{"dot", "svg"} { // png: TestPNGIsTheSVGDrawnAtItsScale
		b, err := rendered("overview", format)
		require.NoError(t, err, format)
		require.NotEmpty(t, b, format)
	}
	_, err := Render(context.Background(), "full", "gif")
	assert.ErrorContains(t, err, `unknown format "gif"`)
	_, err = Render(context.Background(), "overview", "mermaid")
	assert.ErrorContains(t, err, "not \"mermaid\"")
	_, err = Render(context.Background(), "sketch", "svg")
	assert.ErrorContains(t, err, `unknown view "sketch"`)
}

func TestSVGDrawsStatesAndLabels(t *testing.T) {
	full, err := rendered("full", "svg")
	require.NoError(t, err)
	drawn := drawnText(t, full)
	for _, st := range fsm.States() {
		assert.True(t, drawn[st.String()], "state %s not drawn", st)
	}
	for _, row := range transitions.Table.Rows() {
		label := diagrams.EdgeLabel(row)
		assert.True(t, drawn[label], "label %q of %s --%s--> not drawn", label, row.From, row.Cause)
	}

	overview, err := rendered("overview", "svg")
	require.NoError(t, err)
	drawn = drawnText(t, overview)
	for _, st := range fsm.States() {
		assert.True(t, drawn[st.String()], "state %s not drawn in the overview", st)
	}
	for _, e := range diagrams.Overview() {
		for _, m := range e.Meanings {
			assert.True(t, drawn[m], "meaning %q of %s → %s not drawn in the overview", m, e.From, e.To)
		}
	}
}

// The layout is made with the widest common sans-serif face's metrics, and the SVG names
// narrower faces after it, so whatever face a reader has fits the boxes (diagrams.dotStyle).
func TestSVGNamesTheLayoutFontFirst(t *testing.T) {
	for _, view := range Views {
		b, err := rendered(view, "svg")
		require.NoError(t, err)
		families := regexp.MustCompile(`font-family="([^"]*)"`).FindAllStringSubmatch(string(b), -1)
		require.NotEmpty(t, families, view)
		for _, f := range families {
			assert.Equal(t, diagrams.LayoutFont+",Helvetica,Arial,sans-serif", f[1], view)
		}
	}
}

func drawnText(t *testing.T, svg []byte) map[string]bool {
	t.Helper()
	require.True(t, strings.HasPrefix(string(svg), "<?xml"), "not an SVG document")
	// Graphviz escapes more than html.EscapeString does ('-' becomes &#45;), so compare the
	// unescaped text rather than the markup.
	drawn := map[string]bool{}
	for _, m := range svgText.FindAllStringSubmatch(string(svg), -1) {
		drawn[html.UnescapeString(m[1])] = true
	}
	return drawn
}

var svgText = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)

// go-graphviz parses through a package-global wasm module; renders from several goroutines
// (a CLI serving several formats, parallel tests) must not corrupt each other.
func TestSVGConcurrentRendersAgree(t *testing.T) {
	want, err := rendered("full", "svg")
	require.NoError(t, err)
	var wg sync.WaitGroup
	got := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = SVG(context.Background()) })
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		assert.True(t, string(want) == string(got[i]), "render %d differs", i)
	}
}

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
)

// docs/reflector.svg is read on GitHub without running anything, so it must be what the table
// renders today. It is compared byte for byte: the Graphviz inside go-graphviz is wasm with
// built-in font metrics, so its layout does not depend on the machine, and two renders of the
// same DOT have been identical. A go-graphviz upgrade that changes the drawing fails here, and
// regenerating is then the right fix.
func TestCommittedSVGMatchesTable(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "reflector.svg")
	committed, err := os.ReadFile(path)
	require.NoError(t, err, "%s is missing: run `go generate ./diagrams/`", path)
	want, err := renderSVG()
	require.NoError(t, err)
	if string(committed) != string(want) {
		t.Fatalf("%s is stale: it no longer matches fsm.Table. Run `go generate ./diagrams/` and commit docs/reflector.*", path)
	}
}

// renderSVG renders once for every test that only reads the SVG: under -race a wasm render
// takes seconds.
var renderSVG = sync.OnceValues(func() ([]byte, error) { return SVG(context.Background()) })

func TestRenderCoversEveryFormat(t *testing.T) {
	for _, format := range Formats {
		b, err := Render(context.Background(), format)
		require.NoError(t, err, format)
		require.NotEmpty(t, b, format)
		_, err = FileExt(format)
		require.NoError(t, err, format)
	}
	_, err := Render(context.Background(), "png")
	assert.ErrorContains(t, err, `unknown format "png"`)
	_, err = FileExt("png")
	assert.Error(t, err)
}

func TestSVGDrawsStatesAndLabels(t *testing.T) {
	svg, err := renderSVG()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(svg), "<?xml"), "not an SVG document")
	// Graphviz escapes more than html.EscapeString does ('-' becomes &#45;), so compare the
	// unescaped text rather than the markup.
	drawn := map[string]bool{}
	for _, m := range svgText.FindAllStringSubmatch(string(svg), -1) {
		drawn[html.UnescapeString(m[1])] = true
	}
	for _, st := range fsm.States() {
		assert.True(t, drawn[st.String()], "state %s not drawn", st)
	}
	for _, row := range fsm.Table {
		label := diagrams.EdgeLabel(row)
		assert.True(t, drawn[label], "label %q of %s --%s--> not drawn", label, row.From, row.Cause)
	}
}

var svgText = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)

// go-graphviz parses through a package-global wasm module; renders from several goroutines
// (a CLI serving several formats, parallel tests) must not corrupt each other.
func TestSVGConcurrentRendersAgree(t *testing.T) {
	want, err := renderSVG()
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

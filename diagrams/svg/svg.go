package svg

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"

	"github.com/rewatch/rewatch/diagrams/svg/raster"

	"github.com/rewatch/rewatch/diagrams"
)

// graphvizMu serialises renders: go-graphviz parses through one package-global wasm module
// (cgraph.ParseBytes ignores the caller's context and instance), so two renders at once would
// share its memory.
var graphvizMu sync.Mutex

// SVG lays diagrams.DOT() out with Graphviz's dot engine and returns the SVG: the full
// diagram, one label per row of the table.
func SVG(ctx context.Context) ([]byte, error) {
	return renderSVG(ctx, diagrams.DOT())
}

// OverviewSVG is diagrams.OverviewDOT() laid out as SVG: one edge per pair of states.
func OverviewSVG(ctx context.Context) ([]byte, error) {
	return renderSVG(ctx, diagrams.OverviewDOT())
}

// fontFamily follows the face the layout was measured with (diagrams.LayoutFont) by narrower
// ones, so a reader without it gets a sans-serif face that fits the boxes, not the browser's
// default serif.
var fontFamily = strings.NewReplacer(
	`font-family="`+diagrams.LayoutFont+`"`,
	`font-family="`+diagrams.LayoutFont+`,Helvetica,Arial,sans-serif"`,
)

func renderSVG(ctx context.Context, dot string) ([]byte, error) {
	out, err := renderDOT(ctx, []byte(dot), graphviz.SVG)
	if err != nil {
		return nil, err
	}
	return []byte(fontFamily.Replace(string(out))), nil
}

// PNGScale is how many pixels of a PNG stand for one point of the SVG (raster.PNGScale).
const PNGScale = raster.PNGScale

// PNG is the SVG drawn as a PNG (raster.PNG), for documentation and viewers that take
// no SVG. It is the SVG's own drawing, not Graphviz's PNG renderer: that one, as go-graphviz
// ships it, filled every edge and lost nodes.
func PNG(ctx context.Context) ([]byte, error) {
	doc, err := SVG(ctx)
	if err != nil {
		return nil, err
	}
	return encodePNG(doc)
}

// OverviewPNG is OverviewSVG drawn as a PNG, as PNG draws SVG.
func OverviewPNG(ctx context.Context) ([]byte, error) {
	doc, err := OverviewSVG(ctx)
	if err != nil {
		return nil, err
	}
	return encodePNG(doc)
}

func encodePNG(doc []byte) ([]byte, error) { return raster.PNG(doc) }

func renderDOT(ctx context.Context, src []byte, format graphviz.Format) (_ []byte, err error) {
	graphvizMu.Lock()
	defer graphvizMu.Unlock()

	gv, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("diagrams/svg: start graphviz: %w", err)
	}
	defer func() {
		if cerr := gv.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("diagrams/svg: close graphviz: %w", cerr)
		}
	}()
	g, err := graphviz.ParseBytes(src)
	if err != nil {
		return nil, fmt.Errorf("diagrams/svg: parse DOT: %w", err)
	}
	defer func() {
		if cerr := g.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("diagrams/svg: free graph: %w", cerr)
		}
	}()
	var buf bytes.Buffer
	if err := gv.Render(ctx, g, format, &buf); err != nil {
		return nil, fmt.Errorf("diagrams/svg: render %s: %w", format, err)
	}
	return buf.Bytes(), nil
}

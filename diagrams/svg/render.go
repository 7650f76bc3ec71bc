// Package svg draws the reflector's transition table as SVG and PNG: the DOT of package
// diagrams laid out by Graphviz compiled to wasm (go-graphviz), so no system package is
// needed, and the SVG drawn to pixels by its own small rasterizer (Rasterize). It is a module
// of its own because the wasm runtime, fonts and image libraries it needs have no place in the
// module graph of a program that only embeds the reflector.
package svg

import (
	"context"
	"fmt"

	"github.com/rewatch/rewatch/diagrams"
)

// Formats lists what Render accepts: the text formats of package diagrams, then "svg" and
// "png".
var Formats = append(append([]string{}, diagrams.Formats...), "svg", "png")

// Views lists the diagrams Render draws: "full", one edge per row of the table, and
// "overview", one edge per pair of states (diagrams.Overview).
var Views = []string{"full", "overview"}

// Render returns a view of the diagram in a format. It backs `rewatch diagram`; ctx bounds
// the layout, which starts a wasm runtime.
func Render(ctx context.Context, view, format string) ([]byte, error) {
	switch view {
	case "full":
		switch format {
		case "svg":
			return SVG(ctx)
		case "png":
			return PNG(ctx)
		}
		return diagrams.Render(format)
	case "overview":
		switch format {
		case "svg":
			return OverviewSVG(ctx)
		case "png":
			return OverviewPNG(ctx)
		case "dot":
			return []byte(diagrams.OverviewDOT()), nil
		}
		return nil, fmt.Errorf("diagrams/svg: the overview is drawn as dot, svg or png, not %q", format)
	}
	return nil, fmt.Errorf("diagrams/svg: unknown view %q (want full or overview)", view)
}

// Committed lists the files `go generate ./diagrams/` writes into docs/ and a test holds to
// the table: the full diagram as Mermaid, DOT and SVG, and the overview as DOT and SVG. The
// PNGs are drawn on demand, not committed.
var Committed = []struct{ View, Format, File string }{
	{"full", "mermaid", "reflector.mmd"},
	{"full", "dot", "reflector.dot"},
	{"full", "svg", "reflector.svg"},
	{"overview", "dot", "reflector-overview.dot"},
	{"overview", "svg", "reflector-overview.svg"},
}

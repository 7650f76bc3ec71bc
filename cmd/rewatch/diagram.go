package main

import (
	"context"
	_ "embed"
	"io"
	"os"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/diagrams/svg/raster"
)

const diagramExample = `  # Print the Mermaid source (GitHub renders it inside a mermaid code block):
  rewatch diagram

  # Write an SVG:
  rewatch diagram --format svg -o reflector.svg

  # The overview (one edge per pair of states) as a PNG for a slide or a wiki:
  rewatch diagram --view overview --format png -o reflector-overview.png`

// The SVG layouts are the ones `go generate ./diagrams/` commits into docs/, copied here by
// the same generator (TestRenderedSVGsAreTheCommittedOnes holds the copies to docs/, whose
// drift test holds them to the table). Laying them out at run time would link Graphviz, whose
// wasm runtime compiles itself when the program starts — every command, watch included — into
// a cache directory of $TMPDIR shared by every user (docs/cli.md, "rewatch diagram"). Mermaid
// and DOT are drawn from the table as the program runs, the PNG from the SVG.
var (
	//go:embed rendered/reflector.svg
	fullSVG []byte
	//go:embed rendered/reflector-overview.svg
	overviewSVG []byte
)

var (
	diagramViews   = []string{"full", "overview"}
	diagramFormats = append(append([]string{}, diagrams.Formats...), "svg", "png")
)

func runDiagram(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var view, format, out string
	fs := newFlagSet("diagram", "[--view full|overview] [--format mermaid|dot|svg|png] [-o FILE]",
		"Render the reflector's state machine from the same transition table the reflector runs on.",
		diagramExample, stdout)
	fs.StringVar(&view, "view", "full", "full (one edge per transition) or overview (one edge per pair of states)")
	fs.StringVar(&format, "format", "mermaid", "diagram format: mermaid, dot, svg or png (the overview: dot, svg or png)")
	fs.StringVar(&out, "o", "", "write to FILE instead of standard output")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := choice("view", view, diagramViews...); err != nil {
		return err
	}
	if err := choice("format", format, diagramFormats...); err != nil {
		return err
	}
	if view == "overview" && format == "mermaid" {
		return usagef("the overview is drawn as dot, svg or png, not mermaid")
	}
	b, err := renderDiagram(view, format)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return usageError{err}
	}
	return nil
}

// renderDiagram is a view in a format, as diagrams/svg.Render draws it.
func renderDiagram(view, format string) ([]byte, error) {
	doc := fullSVG
	if view == "overview" {
		doc = overviewSVG
	}
	switch {
	case format == "svg":
		return doc, nil
	case format == "png":
		return raster.PNG(doc)
	case view == "overview":
		return []byte(diagrams.OverviewDOT()), nil
	}
	return diagrams.Render(format)
}

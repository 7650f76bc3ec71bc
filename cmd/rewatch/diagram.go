package main

import (
	"context"
	"io"
	"os"

	"github.com/rewatch/rewatch/diagrams/svg"
)

const diagramExample = `  # Print the Mermaid source (GitHub renders it inside a mermaid code block):
  rewatch diagram

  # Write an SVG:
  rewatch diagram --format svg -o reflector.svg

  # The overview (one edge per pair of states) as a PNG for a slide or a wiki:
  rewatch diagram --view overview --format png -o reflector-overview.png`

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
	if err := choice("view", view, svg.Views...); err != nil {
		return err
	}
	if err := choice("format", format, svg.Formats...); err != nil {
		return err
	}
	if view == "overview" && format == "mermaid" {
		return usagef("the overview is drawn as dot, svg or png, not mermaid")
	}
	b, err := svg.Render(ctx, view, format)
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

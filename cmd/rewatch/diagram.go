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
  rewatch diagram --format svg -o reflector.svg`

func runDiagram(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var format, out string
	fs := newFlagSet("diagram", "[--format mermaid|dot|svg] [-o FILE]",
		"Render the reflector's state machine from the same transition table the reflector runs on.",
		diagramExample, stdout)
	fs.StringVar(&format, "format", "mermaid", "diagram format: mermaid, dot or svg")
	fs.StringVar(&out, "o", "", "write to FILE instead of standard output")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := choice("format", format, svg.Formats...); err != nil {
		return err
	}
	b, err := svg.Render(ctx, format)
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

package diagrams

import (
	"context"
	"fmt"
)

// Formats lists what Render accepts, in the order the generator writes them.
var Formats = []string{"mermaid", "dot", "svg"}

// Render returns the diagram in format: "mermaid", "dot" or "svg". It backs
// `rewatch diagram --format`.
func Render(format string) ([]byte, error) {
	return RenderContext(context.Background(), format)
}

// RenderContext is Render with a context for the SVG render, which starts a wasm runtime.
func RenderContext(ctx context.Context, format string) ([]byte, error) {
	switch format {
	case "mermaid":
		return []byte(Mermaid()), nil
	case "dot":
		return []byte(DOT()), nil
	case "svg":
		return SVG(ctx)
	}
	return nil, fmt.Errorf("diagrams: unknown format %q (want mermaid, dot or svg)", format)
}

// FileExt is the extension of format's file in docs/ (docs/reflector.<ext>).
func FileExt(format string) (string, error) {
	switch format {
	case "mermaid":
		return "mmd", nil
	case "dot", "svg":
		return format, nil
	}
	return "", fmt.Errorf("diagrams: unknown format %q", format)
}

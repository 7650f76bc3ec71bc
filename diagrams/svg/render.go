// Package svg draws the reflector's transition table as SVG: the DOT of package diagrams laid
// out by Graphviz compiled to wasm (go-graphviz), so no system package is needed. It is a module
// of its own because the wasm runtime, fonts and image libraries it needs have no place in the
// module graph of a program that only embeds the reflector.
package svg

import (
	"context"
	"fmt"

	"github.com/rewatch/rewatch/diagrams"
)

// Formats lists what Render accepts, in the order the generator writes them.
var Formats = append(append([]string{}, diagrams.Formats...), "svg")

// Render returns the diagram in format: "mermaid", "dot" or "svg". It backs
// `rewatch diagram --format`; ctx bounds the SVG render, which starts a wasm runtime.
func Render(ctx context.Context, format string) ([]byte, error) {
	if format == "svg" {
		return SVG(ctx)
	}
	return diagrams.Render(format)
}

// FileExt is the extension of format's file in docs/ (docs/reflector.<ext>).
func FileExt(format string) (string, error) {
	if format == "svg" {
		return "svg", nil
	}
	ext, err := diagrams.FileExt(format)
	if err != nil {
		return "", fmt.Errorf("diagrams/svg: unknown format %q", format)
	}
	return ext, nil
}

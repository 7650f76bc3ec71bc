package diagrams

import "fmt"

// Formats lists what Render accepts. SVG lives in the diagrams/svg module, which adds it.
var Formats = []string{"mermaid", "dot"}

// Render returns the diagram in format: "mermaid" or "dot".
func Render(format string) ([]byte, error) {
	switch format {
	case "mermaid":
		return []byte(Mermaid()), nil
	case "dot":
		return []byte(DOT()), nil
	}
	return nil, fmt.Errorf("diagrams: unknown format %q (want mermaid or dot; svg is in diagrams/svg)", format)
}

// FileExt is the extension of format's file in docs/ (docs/reflector.<ext>).
func FileExt(format string) (string, error) {
	switch format {
	case "mermaid":
		return "mmd", nil
	case "dot":
		return format, nil
	}
	return "", fmt.Errorf("diagrams: unknown format %q", format)
}

// Command gen writes the committed diagrams (svg.Committed) into docs/ from transitions.Table.
// It runs from `go generate ./diagrams/`; the drift test in package diagrams fails until it has.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rewatch/rewatch/diagrams"
	"github.com/rewatch/rewatch/diagrams/svg"
)

func main() {
	out := flag.String("out", "docs", "directory to write the diagrams into")
	readme := flag.String("readme", "", "README whose diagram block (between the markers) to rewrite")
	flag.Parse()
	err := run(context.Background(), *out)
	if err == nil && *readme != "" {
		err = rewriteReadme(*readme)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	for _, c := range svg.Committed {
		data, err := svg.Render(ctx, c.View, c.Format)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, c.File)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

func rewriteReadme(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := diagrams.SpliceReadme(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

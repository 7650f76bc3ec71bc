// Command gen writes the committed diagrams (svg.Committed) into docs/ from transitions.Table,
// and the SVGs into the CLI's cmd/rewatch/rendered.
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
	cli := flag.String("cli", "", "directory of the CLI's copies of the SVGs (cmd/rewatch/rendered), which it prints without Graphviz")
	flag.Parse()
	err := run(context.Background(), *out)
	if err == nil && *cli != "" {
		err = copySVGs(*out, *cli)
	}
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

// copySVGs copies the committed SVGs into the CLI's directory: `rewatch diagram` prints them
// as they are, so that the CLI links no Graphviz.
func copySVGs(from, to string) error {
	for _, c := range svg.Committed {
		if c.Format != "svg" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, c.File))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, c.File), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

package svg

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/goccy/go-graphviz"

	"github.com/rewatch/rewatch/diagrams"
)

// graphvizMu serialises renders: go-graphviz parses through one package-global wasm module
// (cgraph.ParseBytes ignores the caller's context and instance), so two renders at once would
// share its memory.
var graphvizMu sync.Mutex

// SVG lays diagrams.DOT() out with Graphviz's dot engine and returns the SVG.
func SVG(ctx context.Context) ([]byte, error) {
	return renderDOT(ctx, []byte(diagrams.DOT()), graphviz.SVG)
}

// PNG is SVG's layout as a PNG, for looking at the diagram where no SVG viewer is at hand.
func PNG(ctx context.Context) ([]byte, error) {
	return renderDOT(ctx, []byte(diagrams.DOT()), graphviz.PNG)
}

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

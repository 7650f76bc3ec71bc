package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The SVGs the diagram command prints are the layouts committed in docs/, which their drift
// test holds to the table: `go generate ./diagrams/` writes both.
func TestRenderedSVGsAreTheCommittedOnes(t *testing.T) {
	for file, embedded := range map[string][]byte{"reflector.svg": fullSVG, "reflector-overview.svg": overviewSVG} {
		committed, err := os.ReadFile(filepath.Join("..", "..", "docs", file))
		require.NoError(t, err)
		require.Equal(t, string(committed), string(embedded), "cmd/rewatch/rendered/%s differs from docs/%s: run `go generate ./diagrams/`", file, file)
	}
}

// Nothing of the CLI links Graphviz or its wasm runtime, whose package initialisation compiles
// Graphviz into $TMPDIR/go-graphviz at every start (docs/cli.md, "rewatch diagram"). This test
// binary links what the commands link.
func TestNoCommandLinksGraphviz(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	linked := map[string]bool{}
	for _, d := range info.Deps {
		linked[d.Path] = true
	}
	require.True(t, linked["k8s.io/cli-runtime"], "the build info lists what is linked")
	for _, d := range info.Deps {
		for _, banned := range []string{"github.com/goccy/go-graphviz", "github.com/tetratelabs/wazero"} {
			require.False(t, strings.HasPrefix(d.Path, banned), "the CLI links %s", d.Path)
		}
	}
}

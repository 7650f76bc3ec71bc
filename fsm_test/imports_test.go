package fsm_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/design.md "What each package may import": the pure core links neither client-go nor
// qmuntal/stateless (which lives in transitions/fsmcheck) into a consumer. This is the check anyone can
// run by hand: go list -deps ./fsm ./transitions | grep -E 'client-go|stateless'.
func TestCoreDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command runs this check")
	cmd := exec.Command(goBin, "list", "-deps", "./fsm", "./transitions")
	cmd.Dir = ".." // the library module, from this module's directory
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/rewatch/rewatch/transitions", "go list listed the core")
	for _, d := range deps {
		for _, banned := range []string{"k8s.io/client-go", "github.com/qmuntal/stateless"} {
			require.False(t, strings.HasPrefix(d, banned), "the core depends on %s", d)
		}
	}
}

// docs/design.md "What each package may import": the driver runs the loop and nothing else. How
// requests reach the server is a transport's business and the journal is one of its observers,
// so the driver imports no net/http itself (apimachinery's error helpers do, which is why this
// checks the driver's own imports for it) and links neither the journal, a transport nor
// client-go.
func TestDriverDependencies(t *testing.T) {
	own := goList(t, "-f", "{{join .Imports \" \"}}", "./driver")
	require.NotContains(t, own, "net/http", "the driver speaks HTTP itself")
	deps := goList(t, "-deps", "./driver")
	require.Contains(t, deps, "github.com/rewatch/rewatch/driver", "go list listed the driver")
	for _, d := range deps {
		for _, banned := range []string{"github.com/rewatch/rewatch/journal", "github.com/rewatch/rewatch/transport/", "k8s.io/client-go"} {
			require.False(t, strings.HasPrefix(d, banned), "the driver depends on %s", d)
		}
	}
}

// goList runs go list in the library module with args and returns the words it printed.
func goList(t *testing.T, args ...string) []string {
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "the go command runs this check")
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = ".." // the library module, from this module's directory
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	return strings.Fields(string(out))
}

// docs/design.md "What each package may import": persist is the standard library only, so the
// transport (and the façade) can use it and a consumer who never keeps a snapshot pays nothing.
func TestPersistDependencies(t *testing.T) {
	deps := goList(t, "-deps", "./persist")
	require.Contains(t, deps, "github.com/rewatch/rewatch/persist", "go list listed persist")
	for _, d := range deps {
		if d == "github.com/rewatch/rewatch/persist" {
			continue
		}
		first, _, _ := strings.Cut(d, "/")
		require.NotContains(t, first, ".", "persist depends on %s, which is not the standard library", d)
	}
}

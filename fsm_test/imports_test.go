package fsm_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/design.md "What each package may import": the pure core links neither client-go nor
// qmuntal/stateless (which lives in fsm/fsmcheck) into a consumer. This is the check anyone can
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

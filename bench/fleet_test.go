package bench

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// The fleet benchmark re-executes its binary as the fleet's process; in a test binary that is
// this TestMain, which then runs the child instead of the tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fleet-child" {
		fs := flag.NewFlagSet("fleet-child", flag.ExitOnError)
		v, server, n, journal := fs.String("variant", "", ""), fs.String("server", "", ""), fs.Int("n", 0, ""), fs.String("journal", "", "")
		_ = fs.Parse(os.Args[2:])
		if err := FleetChild(*v, *server, *n, *journal, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The short version of the fleet benchmark (rewatch-bench fleet): three reflectors of each
// kind on a real kube-apiserver through a restart and a compaction the server makes itself.
// rewatch's fleet moves no more full state than client-go's and gets back in sync, and no
// member of any fleet hot-loops.
func TestFleetShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver per run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		testbackend.Unavailable(t, err)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	rs, err := RunFleet(ctx, FleetOptions{Sizes: []int{3}, Objects: 300, Scenarios: []string{ScenarioRestart, ScenarioCompaction},
		Variants: []string{VariantRewatch, VariantClientGo}, WriteEvery: 50 * time.Millisecond, Gap: 3 * time.Second,
		Inflight: 10, Self: self, Logf: t.Logf})
	require.NoError(t, err)
	var sb testWriter
	WriteFleetTable(&sb, rs)
	t.Log("\n" + string(sb))
	by := map[string]FleetResult{}
	for _, r := range rs {
		require.Empty(t, r.Err, "%s %s", r.Scenario, r.Variant)
		require.GreaterOrEqual(t, r.ConvergeSeconds, 0.0)
		// A member that kept failing without waiting would make hundreds of requests a minute.
		require.Less(t, r.MaxRequestsPerReflectorPerMinute, 60, "%s %s: a member hot-looped", r.Scenario, r.Variant)
		by[r.Scenario+"/"+r.Variant] = r
	}
	for _, sc := range []string{ScenarioRestart, ScenarioCompaction} {
		rw, cg := by[sc+"/"+VariantRewatch], by[sc+"/"+VariantClientGo]
		require.LessOrEqual(t, rw.FullStateTransfers, cg.FullStateTransfers, "%s: rewatch's fleet moved more full state", sc)
	}
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

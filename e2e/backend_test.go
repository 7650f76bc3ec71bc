package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/sim"
)

type backend = testbackend.Backend

var (
	configMaps = testbackend.ConfigMaps
	widgets    = testbackend.Widgets
)

func newSimBackend(t *testing.T) backend { return newSimBackendWithBookmarks(t, 2*time.Second) }

// newSimBackendWithBookmarks sets how often the simulator sends BOOKMARKs; each one advances
// the reflector's last RV, so a scenario that needs a stale RV asks for them rarely.
func newSimBackendWithBookmarks(t *testing.T, every time.Duration) backend {
	b, err := testbackend.NewSim(sim.Options{BookmarkInterval: every, TooLargeWait: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(b.Server.Close)
	return b
}

var (
	realOnce   sync.Once
	realShared *testbackend.Real
	realErr    error
)

// sharedReal starts one real server for the whole package (a start costs seconds); the
// simulator is cheap and started per test. TestMain stops it.
func sharedReal(t *testing.T) backend {
	t.Helper()
	realOnce.Do(func() { realShared, realErr = startReal(apiserver.Options{}) })
	if realErr != nil {
		requireOrSkip(t, realErr)
	}
	return realShared
}

func startReal(opts apiserver.Options) (*testbackend.Real, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	return testbackend.StartReal(ctx, opts)
}

// requireOrSkip fails under CI=true and skips elsewhere, as the developers' guide asks.
func requireOrSkip(t *testing.T, err error) {
	t.Helper()
	if ci() {
		t.Fatalf("real kube-apiserver unavailable under CI: %v", err)
	}
	t.Skipf("real kube-apiserver unavailable (run scripts/build-apiserver.sh): %v", err)
}

func apiserverNoWatchCache() apiserver.Options {
	return apiserver.Options{ExtraArgs: []string{"--watch-cache=false"}}
}

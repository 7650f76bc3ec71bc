package soak

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

// backend is the API server the soak runs against; the soak writes configmaps only.
type backend = testbackend.Backend

var configMaps = testbackend.ConfigMaps

func newSimBackend(t *testing.T) *testbackend.Sim {
	b, err := testbackend.NewSim(sim.Options{BookmarkInterval: 2 * time.Second, TooLargeWait: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(b.Server.Close)
	return b
}

var (
	realOnce   sync.Once
	realShared *testbackend.Real
	realErr    error
)

// sharedReal starts one real server for the package; it fails under CI=true when the server
// cannot be had and skips elsewhere (as e2e's requireOrSkip does). TestMain stops it.
func sharedReal(t *testing.T) *testbackend.Real {
	t.Helper()
	realOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		realShared, realErr = testbackend.StartReal(ctx, apiserver.Options{})
	})
	if realErr != nil {
		if ci() {
			t.Fatalf("real kube-apiserver unavailable under CI: %v", realErr)
		}
		t.Skipf("real kube-apiserver unavailable (run scripts/build-apiserver.sh): %v", realErr)
	}
	return realShared
}

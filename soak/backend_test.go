package soak

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

var shared testbackend.SharedReal

// sharedReal is the package's one real server.
func sharedReal(t *testing.T) *testbackend.Real { return shared.Get(t) }

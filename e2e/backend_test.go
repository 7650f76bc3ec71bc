package e2e

import (
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

var shared testbackend.SharedReal

// sharedCBOR is a real server that serves CBOR: kube-apiserver v1.37 does so only behind the
// alpha CBORServingAndStorage feature gate.
var sharedCBOR = testbackend.SharedReal{Options: apiserver.Options{ExtraArgs: []string{"--feature-gates=CBORServingAndStorage=true"}}}

// sharedReal is the package's one real server; the simulator is cheap and started per test.
func sharedReal(t *testing.T) backend { return shared.Get(t) }

func apiserverNoWatchCache() apiserver.Options {
	return apiserver.Options{ExtraArgs: []string{"--watch-cache=false"}}
}

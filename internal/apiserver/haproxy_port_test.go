package apiserver

import (
	"net"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection of a test running beside can still hold the load balancer's port when HAProxy
// binds it (another process picked it); the harness then starts HAProxy on another.
func TestTheLoadBalancerMovesOffAPortTakenMeanwhile(t *testing.T) {
	SkipUnlessOptedIn(t, "starts HAProxy")
	bin, err := findHAProxy()
	if err != nil {
		unavailable(t, os.Getenv("CI") == "true")("HAProxy unavailable: %v", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port

	h := &HA{dir: t.TempDir(), opts: HAOptions{Logf: t.Logf}}
	require.NoError(t, h.startLoadBalancer(t.Context(), bin, port))
	defer h.lb.stop()
	assert.NotEqual(t, port, h.lb.port)
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(h.lb.port))
	require.NoError(t, err, "HAProxy listens on its new port")
	c.Close()
}

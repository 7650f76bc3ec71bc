package loopback

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ports handed out for servers that bind later are outside the kernel's ephemeral range,
// where the connections of tests running beside would be given them (Listen), distinct,
// and free.
func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := outsideEphemeral()
	if lo == hi {
		t.Skip("this kernel's ephemeral range leaves no ports below it (or there is no /proc)")
	}
	ports, err := FreePorts(16)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.GreaterOrEqual(t, p, lo)
		assert.Less(t, p, hi, "port %d is inside the ephemeral range", p)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if assert.NoError(t, err, "port %d free", p) {
			ln.Close()
		}
	}
}

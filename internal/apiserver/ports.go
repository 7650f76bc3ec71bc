package apiserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// freePorts picks n distinct loopback ports for servers that bind them later, seconds later
// for a kube-apiserver or a load balancer started after the servers behind it.
//
// The ports come from below the kernel's ephemeral range (ip_local_port_range), where no
// outgoing connection and no listener on port 0 is given a port: a port from inside it can be
// taken in the meantime by any connection of a test running beside (CI saw HAProxy's bind
// fail that way). Each is checked free by binding it; a clash remains possible only with
// another process that picks the same port explicitly in the same seconds.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	lo, hi := portsOutsideEphemeral()
	for attempts := 0; len(ports) < n; attempts++ {
		addr := "127.0.0.1:0"
		if hi > lo && attempts < 50*n {
			addr = "127.0.0.1:" + strconv.Itoa(lo+rand.IntN(hi-lo))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr != "127.0.0.1:0" {
				continue
			}
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// portsOutsideEphemeral is the range [lo, hi) of ports below the ephemeral range and above
// the well-known and most registered service ports; lo == hi when there is none (a kernel
// whose ephemeral range starts low, or no /proc).
func portsOutsideEphemeral() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	first, err := strconv.Atoi(f[0])
	if err != nil {
		return 0, 0
	}
	const floor = 20000
	if first <= floor+1000 {
		return 0, 0
	}
	return floor, first
}

// Package loopback hands out loopback ports for test servers that bind a port later, or bind
// it again after a pause, outside the range where the kernel gives ports to anyone.
package loopback

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listen listens on a loopback port below the kernel's ephemeral range (ip_local_port_range).
//
// A port inside that range can be given, the moment it is free, to any outgoing connection or
// listener on port 0 of a test running beside: a server that binds its port seconds after it
// was chosen (a kube-apiserver, or a load balancer started after the servers behind it), or
// binds it again after a pause (a gate taken down and up), can find it taken — CI saw
// HAProxy's bind fail that way. Below the range only a process that picks the same port
// explicitly can take it. Where there is no such range (no /proc, or a range that starts
// low), it listens on port 0.
func Listen() (net.Listener, error) {
	lo, hi := outsideEphemeral()
	if lo < hi {
		for range 50 {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(lo+rand.IntN(hi-lo)))
			if err == nil {
				return ln, nil
			}
		}
		// Fifty ports taken at random means the range is crowded; port 0 still works.
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// FreePorts picks n distinct loopback ports, each free when picked (see Listen), for servers
// that bind them later.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := Listen()
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// outsideEphemeral is the range [lo, hi) of ports below the ephemeral range and above the
// well-known and most registered service ports; lo == hi when there is none.
func outsideEphemeral() (lo, hi int) {
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

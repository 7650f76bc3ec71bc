package httpapi

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// closeIdleConnections closes the connections c's transport keeps idle, so that the next
// request dials anew: behind a load balancer it can then reach another kube-apiserver
// (docs/semantics.md, "behind a load balancer"). It looks through client-go's round-tripper
// wrappers (authentication, user agent) to the transport that holds the connections. An HTTP/2
// connection that still carries another request stays open: a client shared by several
// reflectors keeps its connection while any of them is watching.
func closeIdleConnections(c *http.Client) {
	type closeIdler interface{ CloseIdleConnections() }
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	for rt != nil {
		if ci, ok := rt.(closeIdler); ok {
			ci.CloseIdleConnections()
			return
		}
		w, ok := rt.(utilnet.RoundTripperWrapper)
		if !ok {
			return
		}
		rt = w.WrappedRoundTripper()
	}
}

package httpapi

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// wrapper is a round tripper in front of another, as client-go's authentication wrappers are.
type wrapper struct{ rt http.RoundTripper }

func (w wrapper) RoundTrip(r *http.Request) (*http.Response, error) { return w.rt.RoundTrip(r) }
func (w wrapper) WrappedRoundTripper() http.RoundTripper            { return w.rt }

// A fresh connection is a new dial, even through a wrapper that hides the transport holding the
// idle ones.
func TestCloseIdleConnectionsDialsAnew(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := &http.Client{Transport: wrapper{&http.Transport{}}}
	get := func() {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	get()
	get()
	require.Equal(t, int32(1), dials.Load(), "the idle connection is reused")
	closeIdleConnections(c)
	get()
	require.Equal(t, int32(2), dials.Load(), "a new connection after closeIdleConnections")
	closeIdleConnections(&http.Client{Transport: roundTripperFunc(nil)}) // nothing to close: no panic
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

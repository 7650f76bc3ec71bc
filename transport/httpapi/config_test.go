package httpapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

// A User-Agent of its own and ClientUserAgent contradict each other, and a negative
// RequestTimeout means nothing: both are refused.
func TestConfigRefusesContradictoryRequestSettings(t *testing.T) {
	base := Config{Client: &http.Client{}, Server: "https://127.0.0.1:6443", Resource: Resource{Version: "v1", Resource: "configmaps"}}
	c := base
	c.UserAgent, c.ClientUserAgent = "mine", true
	_, err := New(c)
	require.ErrorContains(t, err, "ClientUserAgent")
	c = base
	c.RequestTimeout = -time.Second
	_, err = New(c)
	require.ErrorContains(t, err, "RequestTimeout")
}

// With ClientUserAgent the transport sets no User-Agent, so the client's round tripper (client-go
// sets its rest.Config's there) decides; without it, "rewatch" is sent.
func TestClientUserAgentLeavesTheHeaderToTheClient(t *testing.T) {
	for _, c := range []struct {
		client bool
		want   string
	}{{true, ""}, {false, DefaultUserAgent}} {
		got := make(chan string, 1)
		client := &http.Client{Transport: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			got <- r.Header.Get("User-Agent")
			return nil, errors.New("not sent")
		})}
		tr, err := New(Config{Client: client, Server: "https://127.0.0.1:6443", ClientUserAgent: c.client,
			Resource: Resource{Version: "v1", Resource: "configmaps"}})
		require.NoError(t, err)
		tr.List(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 1}, func(fsm.Event) bool { return true })
		require.Equal(t, c.want, <-got)
	}
}

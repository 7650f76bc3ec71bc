package rewatch_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReflectorSyncsRecordsAndReplays(t *testing.T) {
	s := sim.New(sim.Options{})
	url, err := s.Start()
	require.NoError(t, err)
	defer s.Close()
	for _, n := range []string{"a", "b", "c"} {
		_, err := s.Create(sim.ConfigMaps, "default", n, nil)
		require.NoError(t, err)
	}
	var j bytes.Buffer
	store := driver.NewMemStore()
	r, err := rewatch.New(rewatch.Config{
		Client: &http.Client{}, Server: url, Store: store, Journal: &j, Checked: true,
		Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, r.HasSynced, 10*time.Second, time.Millisecond)
	_, err = s.Delete(sim.ConfigMaps, "default", "b")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return store.Len() == 2 }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.ErrorContains(t, r.Run(context.Background()), "twice")

	st := r.Stats()
	require.Equal(t, 1, st.Lists)
	require.Equal(t, 1, st.Watches)
	require.Equal(t, 2, st.Objects)
	require.GreaterOrEqual(t, st.WatchEvents, 1)

	final, err := journal.Replay(&j, journal.ReplayOptions{Check: true})
	require.NoError(t, err)
	require.Equal(t, "Stopped", final.State.String())
	require.NotContains(t, j.String(), `"data"`, "the journal holds keys, not objects")
}

func TestFromRESTConfigKeepsTLSAndDropsTimeout(t *testing.T) {
	cfg, err := rewatch.FromRESTConfig(&rest.Config{Host: "https://127.0.0.1:6443/prefix", BearerToken: "secret-token", Timeout: time.Second})
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:6443/prefix", cfg.Server)
	require.Zero(t, cfg.Client.Timeout)
	_, err = rewatch.FromRESTConfig(nil)
	require.Error(t, err)
}

func TestNewRejectsIncompleteConfig(t *testing.T) {
	_, err := rewatch.New(rewatch.Config{})
	require.ErrorContains(t, err, "Client and Server are required")
	_, err = rewatch.New(rewatch.Config{Client: &http.Client{}, Server: "http://x", InternalErrorWindow: -time.Second})
	require.ErrorContains(t, err, "InternalErrorWindow")
}

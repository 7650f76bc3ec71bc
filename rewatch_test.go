package rewatch_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
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
		Connection: rewatch.Connection{
			Client: &http.Client{}, Server: url,
			Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"},
		},
		Store: store, Journal: &j, Checked: true,
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

func TestNewValidatesTheWholeConfig(t *testing.T) {
	ok := rewatch.Connection{Client: &http.Client{}, Server: "http://127.0.0.1:1", Resource: rewatch.Resource{Version: "v1", Resource: "configmaps"}}
	for name, tc := range map[string]struct {
		cfg  rewatch.Config
		want []string
	}{
		"empty": {rewatch.Config{}, []string{"Client is nil", `Server "" is not an http(s) URL`, "resource version is empty", "resource name is empty"}},
		"bad URL": {rewatch.Config{Connection: rewatch.Connection{Client: ok.Client, Server: "127.0.0.1:6443", Resource: ok.Resource}},
			[]string{`Server "127.0.0.1:6443" is not an http(s) URL`}},
		"client timeout": {rewatch.Config{Connection: rewatch.Connection{Client: &http.Client{Timeout: time.Second}, Server: ok.Server, Resource: ok.Resource}},
			[]string{"Client has a Timeout"}},
		"resource path": {rewatch.Config{Connection: rewatch.Connection{Client: ok.Client, Server: ok.Server, Resource: rewatch.Resource{Version: "v1", Resource: "config/maps"}}},
			[]string{`"config/maps" is not a valid path segment`}},
		"negative sizes": {rewatch.Config{Connection: rewatch.Connection{Client: ok.Client, Server: ok.Server, Resource: ok.Resource, MaxFrameBytes: -1, MaxListBytes: -1}},
			[]string{"MaxFrameBytes must not be negative", "MaxListBytes must not be negative"}},
		"negative durations": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{InternalErrorWindow: -time.Second, ResumeRVLifetime: -1, RetryAfterCap: -1, QuickWatch: -1}},
			[]string{"InternalErrorWindow must not be negative", "ResumeRVLifetime must not be negative", "RetryAfterCap must not be negative", "QuickWatch must not be negative"}},
		"retry-after spread": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{RetryAfterSpread: 1.5}},
			[]string{"RetryAfterSpread must be at most 1 (negative: exact waits), got 1.5"}},
		"retry-after spread NaN": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{RetryAfterSpread: math.NaN()}},
			[]string{"RetryAfterSpread must be at most 1 (negative: exact waits), got NaN"}},
		"retry-after cap under the floor": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{RetryAfterCap: time.Millisecond}},
			[]string{"RetryAfterCap must be at least 100ms (the floor of every wait), got 1ms"}},
		"silence bound under a second": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{WatchSilence: time.Millisecond}},
			[]string{"WatchSilence must be at least 1s"}},
		"watch timeouts": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{WatchTimeoutMin: 10 * time.Minute, WatchTimeoutMax: time.Minute}},
			[]string{"watch timeout range"}},
		"nil backoff pointer": {rewatch.Config{Connection: ok, Policy: rewatch.Policy{Backoff: (*backoff.Backoff)(nil)}},
			[]string{"Backoff is a nil *backoff.Backoff"}},
		"both halves at once": {rewatch.Config{Connection: rewatch.Connection{Client: ok.Client, Server: "ftp://x", Resource: ok.Resource}, Policy: rewatch.Policy{InternalErrorRewatches: -1}},
			[]string{`Server "ftp://x"`, "InternalErrorRewatches must not be negative"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := rewatch.New(tc.cfg)
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
	_, err := rewatch.New(rewatch.Config{Connection: ok})
	require.NoError(t, err)
}

// Every tunable of the machine and of the transport is set on the façade's Config, and the
// User-Agent of a rest.Config reaches the server.
func TestTunablesReachTheMachineAndTheServer(t *testing.T) {
	s := sim.New(sim.Options{})
	url, err := s.Start()
	require.NoError(t, err)
	defer s.Close()
	agents := make(chan string, 16)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case agents <- req.UserAgent():
		default:
		}
		target, _ := neturl.Parse(url)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, req)
	}))
	defer front.Close()
	cfg, err := rewatch.FromRESTConfig(&rest.Config{Host: front.URL, UserAgent: "my-controller/1.2"})
	require.NoError(t, err)
	cfg.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}
	cfg.QuickWatch, cfg.QuickEndsBeforeBackoff = 3*time.Second, 5
	cfg.WatchTimeoutMin, cfg.WatchTimeoutMax = time.Minute, 2*time.Minute
	cfg.MaxFrameBytes, cfg.PageSize = 1<<20, 7
	var j bytes.Buffer
	cfg.Journal, cfg.Logger = &j, slog.New(slog.DiscardHandler)
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	runUntil(t, r, r.HasSynced)
	require.Equal(t, "my-controller/1.2", <-agents)
	jr, err := journal.NewReader(&j)
	require.NoError(t, err)
	h := jr.Header
	require.Equal(t, 3*time.Second, h.Config.QuickWatch)
	require.Equal(t, 5, h.Config.QuickEndsBeforeBackoff)
	require.Equal(t, time.Minute, h.Config.WatchTimeoutMin)
	require.Equal(t, int64(7), h.Config.PageSize)
}

// A journal that can no longer be written stops the reflector: a run with a hole in its
// journal cannot be replayed (docs/journal.md).
func TestJournalWriteErrorStopsTheReflector(t *testing.T) {
	s := sim.New(sim.Options{})
	url, err := s.Start()
	require.NoError(t, err)
	defer s.Close()
	cfg := fastConfig(url)
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Journal = &failingWriter{after: 1}
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "journal")
		require.ErrorIs(t, err, errDiskFull)
	case <-time.After(10 * time.Second):
		t.Fatal("the reflector kept running without its journal")
	}
}

var errDiskFull = errors.New("no space left on device")

// failingWriter accepts the header and then fails every write.
type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after == 0 {
		return 0, errDiskFull
	}
	w.after--
	return len(p), nil
}

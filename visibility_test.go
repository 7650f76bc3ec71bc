package rewatch_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/sim"
)

var configMapsGR = schema.GroupResource{Resource: "configmaps"}

// faultyServer is the simulator with three configmaps behind the fault proxy.
func faultyServer(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	s := sim.New(sim.Options{})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, n := range []string{"a", "b", "c"} {
		_, err := s.Create(sim.ConfigMaps, "default", n, nil)
		require.NoError(t, err)
	}
	p, err := faultproxy.New(faultproxy.Config{Upstream: u})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func fastConfig(server string) rewatch.Config {
	cfg := rewatch.Config{Connection: rewatch.Connection{
		Client: &http.Client{}, Server: server,
		Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"},
	}}
	cfg.Backoff = backoff.Backoff{Duration: 10 * time.Millisecond, Factor: 1, Steps: 1}
	return cfg
}

func runUntil(t *testing.T, r *rewatch.Reflector, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, cond, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

// docs/semantics.md "Visibility": with no Logger set, a LIST refused with 404 is logged through
// slog.Default() at error level ("Levels") with the server's message; Stats keeps it; a
// slog.DiscardHandler logger silences it.
func TestFailuresAreLoggedByDefault(t *testing.T) {
	var logs syncbuf.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t.Cleanup(func() { slog.SetDefault(prev) })

	p := faultyServer(t)
	p.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 2, Fault: faultproxy.Respond(faultproxy.NotFound(configMapsGR))})
	r, err := rewatch.New(fastConfig(p.URL()))
	require.NoError(t, err)
	runUntil(t, r, r.HasSynced)

	out := logs.String()
	require.Contains(t, out, "level=ERROR")
	require.Contains(t, out, "cause=list-rejected")
	require.Contains(t, out, `configmaps \"\" not found`, "the server's message is in the log line")
	st := r.Stats()
	require.NotNil(t, st.LastFailure)
	f := st.LastFailures[fsm.CauseListRejected]
	require.Equal(t, 404, f.Code)
	require.Equal(t, "NotFound", f.Reason)
	require.Contains(t, f.Message, "not found")
	require.True(t, apierrors.IsNotFound(f.Err))
	require.Equal(t, 2, st.Retries[fsm.CauseListRejected])

	t.Run("a discard logger silences it", func(t *testing.T) {
		var quiet syncbuf.Buffer
		slog.SetDefault(slog.New(slog.NewTextHandler(&quiet, nil)))
		p := faultyServer(t)
		p.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1, Fault: faultproxy.Respond(faultproxy.NotFound(configMapsGR))})
		cfg := fastConfig(p.URL())
		cfg.Logger = slog.New(slog.DiscardHandler)
		r, err := rewatch.New(cfg)
		require.NoError(t, err)
		runUntil(t, r, r.HasSynced)
		require.Empty(t, quiet.String())
		require.Equal(t, 1, r.Stats().Retries[fsm.CauseListRejected])
	})
}

// The watch-error handler, like client-go's SetWatchErrorHandlerWithContext, gets every failure
// as an error apimachinery's predicates understand.
func TestWatchErrorHandlerSeesStatusErrors(t *testing.T) {
	p := faultyServer(t)
	p.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1, Fault: faultproxy.Respond(faultproxy.NotFound(configMapsGR))})
	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.TooManyRequests(0))})
	var mu sync.Mutex
	var errs []error
	cfg := fastConfig(p.URL())
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.WatchErrorHandler = func(ctx context.Context, err error) {
		require.NotNil(t, ctx)
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	runUntil(t, r, func() bool { return r.Stats().Watches >= 2 })
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(errs), 2)
	require.True(t, apierrors.IsNotFound(errs[0]), "first: %v", errs[0])
	require.True(t, apierrors.IsTooManyRequests(errs[1]), "second: %v", errs[1])
}

// gatedStore blocks the end of a full state — Replace of a plain store, Finish of an
// incremental one — until released, and then returns fail.
type gatedStore struct {
	m                *driver.MemStore
	entered, release chan struct{}
	fail             error
}

func (g *gatedStore) gate() error {
	if g.entered != nil {
		close(g.entered)
		<-g.release
	}
	return g.fail
}

type gatedPlain struct{ *gatedStore }

func (g gatedPlain) Add(obj any) error    { return g.m.Add(obj) }
func (g gatedPlain) Update(obj any) error { return g.m.Update(obj) }
func (g gatedPlain) Delete(obj any) error { return g.m.Delete(obj) }
func (g gatedPlain) Replace(items []any, rv string) error {
	if err := g.gate(); err != nil {
		return err
	}
	return g.m.Replace(items, rv)
}

type gatedIncremental struct{ gatedPlain }

func (g gatedIncremental) BeginReplace() (driver.Replacement, error) {
	r, err := g.m.BeginReplace()
	return gatedReplacement{r, g.gatedStore}, err
}

type gatedReplacement struct {
	driver.Replacement
	g *gatedStore
}

func (r gatedReplacement) Finish(rv string) error {
	if err := r.g.gate(); err != nil {
		return err
	}
	return r.Replacement.Finish(rv)
}

// both runs test with a store that takes the full state in one Replace and with one that takes
// it item by item (docs/semantics.md, "Relists").
func both(t *testing.T, test func(t *testing.T, g *gatedStore, store driver.Store)) {
	t.Run("replace", func(t *testing.T) {
		g := &gatedStore{m: driver.NewMemStore()}
		test(t, g, gatedPlain{g})
	})
	t.Run("incremental", func(t *testing.T) {
		g := &gatedStore{m: driver.NewMemStore()}
		test(t, g, gatedIncremental{gatedPlain{g}})
	})
}

// quietReflector is a reflector on a faultyServer of its own that keeps its state in store and
// logs nothing.
func quietReflector(t *testing.T, store driver.Store) *rewatch.Reflector {
	t.Helper()
	cfg := fastConfig(faultyServer(t).URL())
	cfg.Store = store
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	return r
}

// docs/semantics.md "Visibility": HasSynced turns true only once the initial state is applied
// completely — Store.Replace has returned, or the incremental replacement's Finish — so
// cache.WaitForCacheSync never hands a caller an empty or half-filled store.
func TestHasSyncedWaitsForReplace(t *testing.T) {
	both(t, func(t *testing.T, g *gatedStore, store driver.Store) {
		g.entered, g.release = make(chan struct{}), make(chan struct{})
		r := quietReflector(t, store)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		<-g.entered
		require.False(t, r.HasSynced(), "synced while the initial state is still being applied")
		close(g.release)
		require.Eventually(t, r.HasSynced, 10*time.Second, time.Millisecond)
		require.Equal(t, 3, g.m.Len(), "synced, so the initial state is in the store")
		cancel()
		require.NoError(t, <-done)
	})
}

var errStoreFull = errors.New("store full")

// docs/semantics.md "Visibility": a full state the store refused synced nothing. The reflector
// stops with the store's error, and HasSynced stays false: the machine had marked the state
// synced when it asked for it, but the store never took it.
func TestHasSyncedStaysFalseAfterFailedReplace(t *testing.T) {
	both(t, func(t *testing.T, g *gatedStore, store driver.Store) {
		g.fail = errStoreFull
		r := quietReflector(t, store)
		err := r.Run(context.Background())
		require.ErrorIs(t, err, errStoreFull)
		require.False(t, r.HasSynced(), "synced although the store refused the initial state")
		require.False(t, r.Stats().Synced)
	})
}

// docs/semantics.md "Visibility": a relist that keeps failing is visible in Stats — since when,
// how many failures, the last — while HasSynced stays true on the state the store still holds;
// a completed listing clears it.
func TestStatsShowAFailingRelist(t *testing.T) {
	s := sim.New(sim.Options{})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	_, err = s.Create(sim.ConfigMaps, "default", "a", nil)
	require.NoError(t, err)
	p, err := faultproxy.New(faultproxy.Config{Upstream: u})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	cfg := fastConfig(p.URL())
	cfg.Logger = slog.New(slog.DiscardHandler)
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.Eventually(t, func() bool { return r.Stats().Watches == 1 && r.HasSynced() }, 10*time.Second, time.Millisecond)
	require.Nil(t, r.Stats().ListFailing)

	lists := p.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: -1, Fault: faultproxy.Respond(faultproxy.InternalError())})
	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.Expired())})
	require.Eventually(t, func() bool {
		// End the open watch (again, should the first drop come before the server registered
		// it): the re-watch is answered 410, and the relist fails.
		s.DropWatches()
		lf := r.Stats().ListFailing
		return lf != nil && lf.Failures >= 3
	}, 10*time.Second, time.Millisecond, "a failing relist is visible; LISTs refused: %d", lists.Fired())
	st := r.Stats()
	require.True(t, st.ListFailing.Relist)
	require.Equal(t, 500, st.ListFailing.Last.Code)
	require.False(t, st.ListFailing.Since.IsZero())
	require.True(t, st.Synced, "the store still holds the earlier state")
	require.Equal(t, 1, st.Relists, "one relist, however many of its LISTs failed")

	p.ClearRules()
	require.Eventually(t, func() bool { return r.Stats().ListFailing == nil }, 10*time.Second, time.Millisecond, "a completed relist clears it")
	cancel()
	require.NoError(t, <-done)
}

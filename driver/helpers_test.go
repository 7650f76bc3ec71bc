package driver_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
	"github.com/rewatch/rewatch/transport/listwatch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var configMaps = httpapi.Resource{Version: "v1", Resource: "configmaps"}

// transportKind is how the reflector under test reaches the server: both transports must pass
// every scenario, since the machine behind them is the same.
type transportKind string

const (
	viaHTTP      transportKind = "httpapi"
	viaListWatch transportKind = "listwatch"
)

// eachTransport runs test once over each transport.
func eachTransport(t *testing.T, test func(t *testing.T, kind transportKind)) {
	for _, kind := range []transportKind{viaHTTP, viaListWatch} {
		t.Run(string(kind), func(t *testing.T) { test(t, kind) })
	}
}

// configMapListWatch is the ListerWatcher a client-go user would build for configmaps, with
// the REST client's own retries off: with them on, client-go sleeps through a 429's Retry-After
// on the wall clock inside the request, before the transport sees it.
func configMapListWatch(t *testing.T, server string) cache.ListerWatcher {
	rc, err := rest.RESTClientFor(&rest.Config{Host: server, APIPath: "/api", ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}})
	require.NoError(t, err)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return rc.Get().Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).MaxRetries(0).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return rc.Get().Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).MaxRetries(0).Watch(ctx)
		},
	}
}

// world is a simulated API server behind a fault proxy, with a reflector run on a mock clock.
type world struct {
	t      *testing.T
	kind   transportKind
	sim    *sim.Server
	proxy  *faultproxy.Proxy
	clock  *clockx.Mock
	store  *driver.MemStore
	cancel context.CancelFunc
	done   chan error

	mu          sync.Mutex
	transitions []driver.Transition
}

func newWorld(t *testing.T, kind transportKind, objects int) *world {
	t.Helper()
	s := sim.New(sim.Options{BookmarkInterval: time.Hour, TooLargeWait: 10 * time.Millisecond})
	url, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for i := range objects {
		_, err := s.Create(sim.ConfigMaps, "default", "cm-"+strconv.Itoa(i), map[string]string{"i": strconv.Itoa(i)})
		require.NoError(t, err)
	}
	p, err := faultproxy.New(faultproxy.Config{Upstream: url})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return &world{t: t, kind: kind, sim: s, proxy: p, clock: clockx.NewMock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), store: driver.NewMemStore()}
}

// run starts the reflector over the HTTP transport; stop ends it and checks it returned nil.
func (w *world) run(mod func(*driver.Config, *httpapi.Config)) {
	hc := httpapi.Config{Client: &http.Client{}, Server: w.proxy.URL(), Resource: configMaps, Clock: w.clock}
	cfg := driver.Config{
		// The silence watchdog would arm timers of its own on the mock clock, which the tests
		// here count as the machine's; the transports' own tests cover it.
		Policy:  transitions.Config{Seed: 7, WatchSilence: -1},
		Store:   w.store,
		Clock:   w.clock,
		Checked: true,
		Observers: []driver.Observer{driver.ObserverFunc(func(tr driver.Transition) {
			tr.Commands = append([]fsm.Command(nil), tr.Commands...)
			w.mu.Lock()
			w.transitions = append(w.transitions, tr)
			w.mu.Unlock()
		})},
	}
	if mod != nil {
		mod(&cfg, &hc)
	}
	switch w.kind {
	case viaHTTP:
		tr, err := httpapi.New(hc)
		require.NoError(w.t, err)
		cfg.Transport = tr
	case viaListWatch:
		tr, err := listwatch.New(configMapListWatch(w.t, w.proxy.URL()), "configmaps")
		require.NoError(w.t, err)
		cfg.Transport = tr
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan error, 1)
	go func() { w.done <- driver.Run(ctx, cfg) }()
	w.t.Cleanup(func() { w.stop() })
}

func (w *world) stop() error {
	if w.cancel == nil {
		return nil
	}
	w.cancel()
	w.cancel = nil
	select {
	case err := <-w.done:
		return err
	case <-time.After(10 * time.Second):
		w.t.Fatal("reflector did not stop within 10s of real time")
		return nil
	}
}

// synced waits until the store holds exactly what the server holds.
func (w *world) synced() {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		return maps.Equal(w.store.Versions(), w.sim.Snapshot(sim.ConfigMaps))
	}, 10*time.Second, 2*time.Millisecond, "store never matched the server")
}

// waitState waits until the machine has reached state.
func (w *world) waitState(state fsm.State) driver.Transition {
	w.t.Helper()
	var last driver.Transition
	require.Eventually(w.t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		if len(w.transitions) == 0 {
			return false
		}
		last = w.transitions[len(w.transitions)-1]
		return last.To == state
	}, 10*time.Second, 2*time.Millisecond, "never reached %s", state)
	return last
}

// waitCause waits until observers have heard of a transition with cause c. The driver arms a
// transition's timer before its observers hear of it, so a wait for the timer alone does not
// mean the transition is recorded.
func (w *world) waitCause(c fsm.Cause) {
	w.t.Helper()
	require.Eventually(w.t, func() bool { return slices.Contains(w.causes(), c) }, 10*time.Second, 2*time.Millisecond,
		"never saw %v; saw %v", c, w.causes())
}

// waitTimer waits until the reflector has armed its backoff timer and returns its delay.
func (w *world) waitTimer() time.Duration {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(w.t, w.clock.WaitForTimers(ctx, 1))
	d := w.clock.ArmedDurations()
	require.Len(w.t, d, 1)
	return d[0]
}

func (w *world) causes() []fsm.Cause {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []fsm.Cause
	for _, t := range w.transitions {
		if t.Cause != fsm.NoCause && t.Cause != fsm.CauseWatchEvent && t.Cause != fsm.CauseWatchOpened {
			out = append(out, t.Cause)
		}
	}
	return out
}

func (w *world) watchRVs() []string {
	var out []string
	for _, r := range w.proxy.Requests() {
		if r.Kind == faultproxy.Watch {
			out = append(out, r.Query.Get("resourceVersion"))
		}
	}
	return out
}

// fullStateItems are the keys of the full-state items (LIST items, watch-list initial
// events) of the last relist: those that came without their object (kept) and those that came
// decoded. ended says the machine is watching after that relist (Relisting → Watching, and
// nothing since has left Watching): its whole state is in the store, kept and decoded are all
// it will have, and no other relist is under way or waited for.
func (w *world) fullStateItems() (kept, decoded []string, ended bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, tr := range w.transitions {
		if tr.To == fsm.Relisting && tr.From != fsm.Relisting {
			kept, decoded, ended = nil, nil, false
		}
		switch {
		case tr.From == fsm.Relisting && tr.To == fsm.Watching:
			ended = true
		case tr.To != fsm.Watching:
			ended = false
		}
		for _, c := range tr.Commands {
			switch {
			case c.Kind != fsm.CmdStage || c.Key == "":
			case c.Object == nil:
				kept = append(kept, c.Key)
			default:
				decoded = append(decoded, c.Key)
			}
		}
	}
	sort.Strings(kept)
	sort.Strings(decoded)
	return kept, decoded, ended
}

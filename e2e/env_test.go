package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// forEachBackend runs a scenario on the simulator and on the real server, each in JSON and in
// protobuf.
func forEachBackend(t *testing.T, scenario func(t *testing.T, b backend)) {
	t.Run("sim", func(t *testing.T) { scenario(t, newSimBackend(t)) })
	t.Run("sim-protobuf", func(t *testing.T) { scenario(t, inProtobuf{newSimBackend(t)}) })
	t.Run("kube-apiserver", func(t *testing.T) { scenario(t, sharedReal(t)) })
	t.Run("kube-apiserver-protobuf", func(t *testing.T) { scenario(t, inProtobuf{sharedReal(t)}) })
	t.Run("kube-apiserver-cbor", func(t *testing.T) { scenario(t, inCBOR{sharedCBOR.Get(t)}) })
}

// inCBOR is a backend whose reflectors decode unstructured objects in CBOR, configmaps and the
// CRD alike; the server must have CBOR serving on, and the fault proxy injects in CBOR.
type inCBOR struct{ backend }

func (b inCBOR) Name() string { return b.backend.Name() + " (cbor)" }

// inProtobuf is a backend whose reflectors ask for protobuf only: configmaps decoded into
// their Go type, and the CRD (which the server does not serve in protobuf) as
// PartialObjectMetadata, which it does. The fault proxy injects its faults in protobuf too.
type inProtobuf struct{ backend }

func (b inProtobuf) Name() string { return b.backend.Name() + " (protobuf)" }

// wire sets cfg up for b's encoding.
func wire(b backend, gvr schema.GroupVersionResource, cfg *rewatch.Config) {
	if _, ok := b.(inCBOR); ok {
		cfg.Format = rewatch.FormatCBOR
		return
	}
	if _, ok := b.(inProtobuf); !ok {
		return
	}
	cfg.Format = rewatch.FormatProtobuf
	if gvr == configMaps {
		cfg.Decoder = httpapi.Typed(scheme.Scheme)
	} else {
		cfg.Decoder = httpapi.Metadata()
	}
}

// env is one reflector in its own namespace, behind its own fault proxy.
type env struct {
	t     *testing.T
	b     backend
	gvr   schema.GroupVersionResource
	ns    string
	proxy *faultproxy.Proxy
	store *driver.MemStore
	r     *rewatch.Reflector

	mu    sync.Mutex
	trans []driver.Transition

	cancel context.CancelFunc
	done   chan error
}

var nsSeq atomic.Int64

var nonDNS = regexp.MustCompile(`[^a-z0-9]+`)

func newEnv(t *testing.T, b backend, gvr schema.GroupVersionResource, objects int) *env {
	t.Helper()
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	ns := strings.Trim(fmt.Sprintf("e%d-%s", nsSeq.Add(1), name), "-")
	require.NoError(t, b.EnsureNamespace(t.Context(), ns))
	for i := range objects {
		require.NoError(t, b.Put(t.Context(), gvr, ns, fmt.Sprintf("obj-%d", i), "0"))
	}
	_, protobuf := b.(inProtobuf)
	_, cbor := b.(inCBOR)
	p, err := faultproxy.New(faultproxy.Config{Upstream: b.URL(), Transport: b.Transport(), ForceJSON: !protobuf && !cbor})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return &env{t: t, b: b, gvr: gvr, ns: ns, proxy: p, store: driver.NewMemStore()}
}

// start runs a reflector with defaults (as a user would) plus mod, through the proxy.
func (e *env) start(mod func(*rewatch.Config)) {
	e.t.Helper()
	cfg := rewatch.Config{
		Connection: rewatch.Connection{
			Client: &http.Client{}, Server: e.proxy.URL(),
			Resource: rewatch.Resource{Group: e.gvr.Group, Version: e.gvr.Version, Resource: e.gvr.Resource, Namespace: e.ns},
		},
		Store: e.store, Checked: true,
		OnTransition: func(tr driver.Transition) {
			if tr.Cause == fsm.CauseWatchEvent {
				return
			}
			tr.Commands = append([]fsm.Command(nil), tr.Commands...)
			e.mu.Lock()
			e.trans = append(e.trans, tr)
			e.mu.Unlock()
		},
	}
	wire(e.b, e.gvr, &cfg)
	if mod != nil {
		mod(&cfg)
	}
	r, err := rewatch.New(cfg)
	require.NoError(e.t, err)
	e.r = r
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan error, 1)
	go func() { e.done <- r.Run(ctx) }()
	e.t.Cleanup(func() { e.stop() })
}

// stop stops the reflector and returns how long that took in real time.
func (e *env) stop() time.Duration {
	if e.cancel == nil {
		return 0
	}
	start := time.Now()
	e.cancel()
	e.cancel = nil
	select {
	case err := <-e.done:
		require.NoError(e.t, err)
	case <-time.After(30 * time.Second):
		e.t.Fatal("reflector did not stop within 30s")
	}
	return time.Since(start)
}

// converged waits until the store equals a fresh LIST of the server: no lost, stale or
// phantom objects.
func (e *env) converged() {
	e.t.Helper()
	var want, got map[string]string
	ok := waitFor(30*time.Second, func() bool {
		var err error
		want, err = e.b.List(context.Background(), e.gvr, e.ns)
		if err != nil {
			return false
		}
		got = e.store.Versions()
		return maps.Equal(want, got)
	})
	require.True(e.t, ok, "store never matched a fresh LIST\nserver: %v\nstore:  %v\ntransitions:\n%s", want, got, e.describe())
}

func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// write changes the namespace: updates, creates and deletes.
func (e *env) write(tag string) {
	e.t.Helper()
	ctx := context.Background()
	require.NoError(e.t, e.b.Put(ctx, e.gvr, e.ns, "obj-0", tag))
	require.NoError(e.t, e.b.Put(ctx, e.gvr, e.ns, "new-"+tag, tag))
	require.NoError(e.t, e.b.Delete(ctx, e.gvr, e.ns, "new-"+tag))
	require.NoError(e.t, e.b.Put(ctx, e.gvr, e.ns, "kept-"+tag, tag))
}

// waitCause waits for a transition with cause c and returns it.
func (e *env) waitCause(c fsm.Cause) driver.Transition {
	e.t.Helper()
	return e.waitCauseWithin(c, 30*time.Second)
}

// waitCauseWithin waits up to d for a transition with cause c and returns it.
func (e *env) waitCauseWithin(c fsm.Cause, d time.Duration) driver.Transition {
	e.t.Helper()
	var found driver.Transition
	ok := waitFor(d, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, tr := range e.trans {
			if tr.Cause == c {
				found = tr
				return true
			}
		}
		return false
	})
	require.True(e.t, ok, "no %s transition; saw:\n%s", c, e.describe())
	return found
}

func (e *env) describe() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, tr := range e.trans {
		fmt.Fprintf(&b, "  %s --%s--> %s  (%s)\n", tr.From, tr.Cause, tr.To, tr.Event)
	}
	for _, r := range e.proxy.Requests() {
		fmt.Fprintf(&b, "  proxy: %s rv=%q status=%d\n", r.Kind, r.Query.Get("resourceVersion"), r.Status)
	}
	return b.String()
}

func (e *env) requests(kind faultproxy.Kind) []faultproxy.Record {
	var out []faultproxy.Record
	for _, r := range e.proxy.Requests() {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func armedDelay(tr driver.Transition) time.Duration {
	for _, c := range tr.Commands {
		if c.Kind == fsm.CmdArmTimer {
			return c.Delay
		}
	}
	return -1
}

// ---- the results table printed at the end of the run ----

type result struct {
	scenario, backend string
	lists, watches    int
	note              string
}

var (
	resultsMu sync.Mutex
	results   []result
)

// report records a scenario's request counts for the table TestMain prints. A protobuf run
// must have been answered in protobuf, or it proved nothing about protobuf.
func (e *env) report(scenario, note string) {
	if _, ok := e.b.(inProtobuf); ok {
		require.Equal(e.t, "protobuf", e.r.Stats().AnsweredFormat, "the server did not answer in protobuf")
	}
	if _, ok := e.b.(inCBOR); ok {
		require.Equal(e.t, "cbor", e.r.Stats().AnsweredFormat, "the server did not answer in CBOR")
	}
	lists, watches := e.proxy.Counts()
	resultsMu.Lock()
	results = append(results, result{scenario, e.b.Name(), lists, watches, note})
	resultsMu.Unlock()
}

func printResults() {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if len(results) == 0 {
		return
	}
	sort.SliceStable(results, func(i, j int) bool { return results[i].scenario < results[j].scenario })
	fmt.Println("\n| scenario | backend | LIST requests | WATCH requests | observed |")
	fmt.Println("|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %s | %s | %d | %d | %s |\n", r.scenario, r.backend, r.lists, r.watches, r.note)
	}
}

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// sharedHA is the package's one HA control plane (three etcd members, three kube-apiservers,
// HAProxy), started on first use; each HA scenario leaves it as it found it.
var sharedHA struct {
	once sync.Once
	h    *apiserver.HA
	err  error
}

func haCluster(t *testing.T) *apiserver.HA {
	t.Helper()
	sharedHA.once.Do(func() {
		if sharedHA.err = apiserver.HAProxyAvailable(); sharedHA.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		if sharedHA.err = apiserver.EnsureBuilt(ctx); sharedHA.err != nil {
			return
		}
		sharedHA.h, sharedHA.err = apiserver.StartHA(ctx, apiserver.HAOptions{Logf: func(f string, a ...any) { fmt.Printf(f+"\n", a...) }})
	})
	if sharedHA.err != nil {
		testbackend.Unavailable(t, sharedHA.err)
	}
	return sharedHA.h
}

func stopSharedHA() {
	if sharedHA.h != nil {
		sharedHA.h.Stop()
	}
}

// haMeter counts, from the client side, what one reflector asks of the control plane.
type haMeter struct {
	base http.RoundTripper

	mu                  sync.Mutex
	lists               int // whole LISTs (first pages; continuation pages are not counted)
	watches, watchLists int // WATCHes, and watch-lists (sendInitialEvents: a full-state transfer)
	first               chan struct{}
	firstOnce           sync.Once
	statuses            map[string]int // "kind code" → responses
}

func newHAMeter(base http.RoundTripper) *haMeter {
	return &haMeter{base: base, first: make(chan struct{}), statuses: map[string]int{}}
}

func (m *haMeter) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	kind := ""
	if req.Method == http.MethodGet {
		isWatch := q.Get("watch") == "1" || q.Get("watch") == "true"
		m.mu.Lock()
		switch {
		case isWatch && q.Get("sendInitialEvents") == "true":
			m.watchLists++
			kind = "watch-list"
		case isWatch:
			m.watches++
			kind = "watch"
		case q.Get("continue") != "":
			kind = "page"
		default:
			m.lists++
			kind = "list"
		}
		m.mu.Unlock()
		m.firstOnce.Do(func() { close(m.first) })
	}
	resp, err := m.base.RoundTrip(req)
	if kind != "" {
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.mu.Lock()
		m.statuses[kind+" "+code]++
		m.mu.Unlock()
	}
	return resp, err
}

// WrappedRoundTripper lets a fresh-connection re-watch reach the transport beneath.
func (m *haMeter) WrappedRoundTripper() http.RoundTripper { return m.base }

type haCounts struct {
	lists, watchLists, watches int
	statuses                   map[string]int
}

func (m *haMeter) counts() haCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := map[string]int{}
	for k, v := range m.statuses {
		st[k] = v
	}
	return haCounts{lists: m.lists, watchLists: m.watchLists, watches: m.watches, statuses: st}
}

// sighting is a resourceVersion a store came to hold for a key, and when.
type sighting struct {
	rv int64
	at time.Time
}

// observedStore is a cache.Store that notes when each version of each object arrived, so that
// how long the store lagged behind each write can be told afterwards.
type observedStore struct {
	cache.Store
	mu   sync.Mutex
	seen map[string][]sighting
}

func newObservedStore() *observedStore {
	return &observedStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), seen: map[string][]sighting{}}
}

func (s *observedStore) note(obj any, at time.Time) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	s.mu.Lock()
	s.seen[key] = append(s.seen[key], sighting{rv, at})
	s.mu.Unlock()
}

func (s *observedStore) Add(obj any) error {
	err := s.Store.Add(obj)
	s.note(obj, time.Now())
	return err
}

func (s *observedStore) Update(obj any) error {
	err := s.Store.Update(obj)
	s.note(obj, time.Now())
	return err
}

func (s *observedStore) Replace(items []any, rv string) error {
	err := s.Store.Replace(items, rv)
	now := time.Now()
	for _, it := range items {
		s.note(it, now)
	}
	return err
}

func (s *observedStore) versions() map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		if m, err := meta.Accessor(obj); err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

// staleFor is how long after the write acknowledged at ack the store first held key at rv or
// newer (0 when it already did); ok is false when it never did.
func (s *observedStore) staleFor(key string, rv int64, ack time.Time) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sg := range s.seen[key] {
		if sg.rv >= rv {
			return max(0, sg.at.Sub(ack)), true
		}
	}
	return 0, false
}

// haMember is one reflector of an HA scenario, on a connection of its own.
type haMember struct {
	kind  string // "rewatch" or "client-go"
	meter *haMeter
	store *observedStore
	stop  func()

	mu     sync.Mutex
	causes map[string]int // rewatch's transitions by cause, watch events left out
}

// uncachedConfig is h's admin configuration with a transport of its own: client-go shares
// one transport (one HTTP/2 connection, so one kube-apiserver) among configurations that
// look alike unless they carry a Proxy function, and each member must hold its own.
func uncachedConfig(h *apiserver.HA, wrap func(http.RoundTripper) http.RoundTripper) *rest.Config {
	cfg := h.RESTConfig()
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	cfg.WrapTransport = wrap
	return cfg
}

func startHAMember(t *testing.T, h *apiserver.HA, kind, ns string) *haMember {
	t.Helper()
	var meter *haMeter
	cfg := uncachedConfig(h, func(rt http.RoundTripper) http.RoundTripper { meter = newHAMeter(rt); return meter })
	m := &haMember{kind: kind, store: newObservedStore()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	switch kind {
	case "rewatch":
		rc, err := rewatch.FromRESTConfig(cfg)
		require.NoError(t, err)
		rc.Resource = rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: ns}
		rc.Store = m.store
		rc.Checked = true
		m.causes = map[string]int{}
		rc.OnTransition = func(tr driver.Transition) {
			if tr.Cause != fsm.CauseWatchEvent && tr.Cause != fsm.NoCause {
				m.mu.Lock()
				m.causes[tr.Cause.String()]++
				m.mu.Unlock()
			}
		}
		r, err := rewatch.New(rc)
		require.NoError(t, err)
		go func() { defer close(done); _ = r.Run(ctx) }()
	case "client-go":
		dyn, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		ri := dyn.Resource(configMaps).Namespace(ns)
		lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return ri.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return ri.Watch(ctx, o)
			},
		}, dyn)
		r := cache.NewReflector(lw, &unstructured.Unstructured{}, m.store, 0)
		go func() { defer close(done); r.RunWithContext(ctx) }()
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	m.meter = meter
	require.NotNil(t, meter, "the transport was built")
	m.stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30s", kind)
		}
	}
	t.Cleanup(m.stop)
	// Its connection is open once it has asked for something: the next member's connection
	// then goes to the next kube-apiserver in HAProxy's round robin.
	select {
	case <-meter.first:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s sent no request within 30s", kind)
	}
	return m
}

// haWrite is one acknowledged write: key reached rv at ack.
type haWrite struct {
	key string
	rv  int64
	ack time.Time
}

// haWriter updates the scenario's objects in turn, as fast as every interval, and remembers
// each acknowledged write. It writes to one kube-apiserver directly and moves to the next on
// a failure: through the load balancer, its one HTTP/2 connection could stay on a
// kube-apiserver cut off from etcd, and no write would be acknowledged while the members
// that are cut off too fall behind unmeasured.
type haWriter struct {
	mu     sync.Mutex
	writes []haWrite
	failed int
	stop   func()
}

func startHAWriter(t *testing.T, h *apiserver.HA, ns string, objects int, every time.Duration) *haWriter {
	var clients []kubernetes.Interface
	for i := range h.APIServers() {
		cs, err := kubernetes.NewForConfig(h.APIServerRESTConfig(i))
		require.NoError(t, err)
		clients = append(clients, cs)
	}
	w := &haWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		at := 0
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("obj-%d", i%objects)
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
			cm, err := clients[at].CoreV1().ConfigMaps(ns).Update(wctx,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": strconv.Itoa(i)}}, metav1.UpdateOptions{})
			wcancel()
			w.mu.Lock()
			if err != nil {
				w.failed++
				at = (at + 1) % len(clients)
			} else if rv, perr := strconv.ParseInt(cm.ResourceVersion, 10, 64); perr == nil {
				w.writes = append(w.writes, haWrite{key: ns + "/" + name, rv: rv, ack: time.Now()})
			}
			w.mu.Unlock()
		}
	}()
	w.stop = func() { cancel(); <-done }
	t.Cleanup(w.stop)
	return w
}

// haFigures is one kind of reflector's account of a scenario, summed over its members but for
// the longest stale time, which is the longest any of them had.
type haFigures struct {
	members                    int
	lists, watchLists, watches int
	longestStale               time.Duration
	statuses                   map[string]int
	causes                     map[string]int
}

// fullState is how many times the members transferred the full state: whole LISTs and
// watch-lists.
func (f haFigures) fullState() int { return f.lists + f.watchLists }

// haScenario runs the fault under writes with members reflectors of each kind (interleaved, so
// that HAProxy's round robin puts one of each kind on each kube-apiserver) and returns each
// kind's figures once every store equals the server.
func haScenario(t *testing.T, name string, members int, fault func(ctx context.Context, h *apiserver.HA)) map[string]haFigures {
	h := haCluster(t)
	ctx := t.Context()
	const objects = 20
	ns := fmt.Sprintf("ha-%d-%s", nsSeq.Add(1), nonDNS.ReplaceAllString(name, "-"))
	cs, err := kubernetes.NewForConfig(uncachedConfig(h, nil))
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for i := range objects {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var all []*haMember
	for range members {
		for _, kind := range []string{"rewatch", "client-go"} {
			all = append(all, startHAMember(t, h, kind, ns))
		}
	}
	sessions, err := h.BackendSessions(ctx)
	require.NoError(t, err)
	t.Logf("%s: connections per kube-apiserver after the members started: %v", name, sessions)
	haConverged(t, cs, ns, all, 60*time.Second)

	w := startHAWriter(t, h, ns, objects, 50*time.Millisecond)
	time.Sleep(2 * time.Second)
	began := time.Now()
	fault(ctx, h)
	t.Logf("%s: the fault took %s", name, time.Since(began).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	w.stop()
	haConverged(t, cs, ns, all, 60*time.Second)

	w.mu.Lock()
	writes, failed := slices.Clone(w.writes), w.failed
	w.mu.Unlock()
	require.NotEmpty(t, writes)
	out := map[string]haFigures{}
	for _, m := range all {
		m.stop()
		f := out[m.kind]
		c := m.meter.counts()
		f.members++
		f.lists += c.lists
		f.watchLists += c.watchLists
		f.watches += c.watches
		if f.statuses == nil {
			f.statuses = map[string]int{}
		}
		for k, v := range c.statuses {
			f.statuses[k] += v
		}
		m.mu.Lock()
		for k, v := range m.causes {
			if f.causes == nil {
				f.causes = map[string]int{}
			}
			f.causes[k] += v
		}
		m.mu.Unlock()
		for _, wr := range writes {
			d, ok := m.store.staleFor(wr.key, wr.rv, wr.ack)
			require.True(t, ok, "%s never held %s at %d", m.kind, wr.key, wr.rv)
			f.longestStale = max(f.longestStale, d)
		}
		out[m.kind] = f
	}
	t.Logf("%s: %d writes acknowledged, %d failed", name, len(writes), failed)
	for _, kind := range []string{"rewatch", "client-go"} {
		f := out[kind]
		t.Logf("%s: %-9s ×%d: full-state transfers %d (LIST %d, watch-list %d), WATCH requests %d, longest stale %s; responses %v; causes %v",
			name, kind, f.members, f.fullState(), f.lists, f.watchLists, f.watches, f.longestStale.Round(time.Millisecond), f.statuses, f.causes)
		resultsMu.Lock()
		results = append(results, result{scenario: "HA: " + name, backend: "3 kube-apiservers + HAProxy, " + kind,
			lists: f.lists + f.watchLists, watches: f.watches,
			note: fmt.Sprintf("%d members; full-state transfers %d; longest stale %s", f.members, f.fullState(), f.longestStale.Round(time.Millisecond))})
		resultsMu.Unlock()
	}
	return out
}

// haConverged waits until every member's store equals a fresh LIST through the load balancer.
func haConverged(t *testing.T, cs kubernetes.Interface, ns string, all []*haMember, within time.Duration) {
	t.Helper()
	var want map[string]string
	var lagging []string
	ok := waitFor(within, func() bool {
		l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		want = map[string]string{}
		for _, it := range l.Items {
			want[it.Namespace+"/"+it.Name] = it.ResourceVersion
		}
		lagging = nil
		for i, m := range all {
			if !maps.Equal(want, m.store.versions()) {
				lagging = append(lagging, fmt.Sprintf("%s#%d", m.kind, i))
			}
		}
		return len(lagging) == 0
	})
	require.True(t, ok, "stores never matched a fresh LIST within %v: %v lag", within, lagging)
}

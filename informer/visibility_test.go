package informer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// countingMetrics counts what the reflector reports through rewatch.Metrics.
type countingMetrics struct {
	mu       sync.Mutex
	requests map[string]int
	events   int
}

func (m *countingMetrics) Request(kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[kind]++
}
func (m *countingMetrics) Transition(fsm.State, fsm.State, fsm.Cause) {}
func (m *countingMetrics) Waited(fsm.Cause, time.Duration)            {}
func (m *countingMetrics) WatchEvent(fsm.WatchEventType) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events++
}
func (m *countingMetrics) Objects(int) {}

// An informer shows what its reflector did as the façade does: Stats, Metrics, the transition
// hook and the journal, from its options.
func TestInformerStatsMetricsJournal(t *testing.T) {
	s, simURL := startSim(t, 3)
	m := &countingMetrics{requests: map[string]int{}}
	var transitions atomic.Int64
	var jbuf syncbuf.Buffer
	opts := quiet
	opts.Metrics = m
	opts.OnTransition = func(driver.Transition) { transitions.Add(1) }
	opts.Journal = &jbuf
	inf, err := informer.NewHTTP(httpapi.Config{Client: &http.Client{}, Server: simURL, Decoder: httpapi.Typed(scheme.Scheme),
		Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}}, opts)
	require.NoError(t, err)
	stop := run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	_, err = s.Create(sim.ConfigMaps, "default", "late", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return inf.Stats().WatchEvents >= 1 }, 10*time.Second, time.Millisecond)
	st := inf.Stats()
	require.True(t, st.Synced)
	require.Equal(t, 1, st.Lists)
	require.Equal(t, 4, st.Objects)
	require.GreaterOrEqual(t, st.Watches, 1)
	require.NotEmpty(t, st.WireFormat)
	require.NotEmpty(t, st.AnsweredFormat)
	require.Equal(t, inf.LastSyncResourceVersion(), st.LastResourceVersion)
	m.mu.Lock()
	require.Equal(t, 1, m.requests["list"])
	require.GreaterOrEqual(t, m.requests["watch"], 1)
	require.GreaterOrEqual(t, m.events, 1)
	m.mu.Unlock()
	require.Positive(t, transitions.Load())
	stop()
	r, err := journal.NewReader(strings.NewReader(jbuf.String()))
	require.NoError(t, err)
	require.Contains(t, r.Header.Resource, "configmaps")
	_, err = r.Next()
	require.NoError(t, err, "the journal has the transitions after its header")
}

// lines is a logr sink's output, one line a call.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, prefix+" "+args)
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

func (l *lines) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.l {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// With no logger of its own, an informer logs to the logger of the context it runs with, as a
// controller's components do (klog.FromContext); Options.Log, when set, wins.
func TestInformerLogsToTheContextsLogger(t *testing.T) {
	var fromCtx, own lines
	ctx := klog.NewContext(t.Context(), funcr.New(fromCtx.add, funcr.Options{}))
	// An informer without a transport cannot run, and says so in its log.
	informer.New(nil, &corev1.ConfigMap{}, informer.Options{Name: "ctx-logged"}).RunWithContext(ctx)
	require.True(t, fromCtx.contains("ctx-logged"), "the context's logger got nothing: %v", fromCtx.l)

	l := funcr.New(own.add, funcr.Options{})
	informer.New(nil, &corev1.ConfigMap{}, informer.Options{Name: "own-logged", Log: &l}).RunWithContext(ctx)
	require.True(t, own.contains("own-logged"), "Options.Log got nothing: %v", own.l)
	require.False(t, fromCtx.contains("own-logged"))
}

// As client-go's informer, a handler's panic with no HandlerOptions.Logger is logged through
// klog's process-wide logger, "Observed a panic" with the panic's value.
func TestConformanceHandlerPanicLogsThroughKlog(t *testing.T) {
	reallyCrash := utilruntime.ReallyCrash
	t.Cleanup(func() { utilruntime.ReallyCrash = reallyCrash })
	utilruntime.ReallyCrash = false
	var logged lines
	klog.SetLogger(funcr.New(logged.add, funcr.Options{}))
	t.Cleanup(klog.ClearLogger)
	forEach(t, func(t *testing.T, impl implementation) {
		src, lw := source(t)
		inf := impl.new(lw)
		var h names
		boom := fmt.Sprintf("klog-boom from %s", impl.name)
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if objName(obj) == "boom" {
				panic(boom)
			}
			h.OnAdd(obj, false)
		}})
		require.NoError(t, err)
		run(t, inf)
		src.Add(configMap("boom"))
		src.Add(configMap("after"))
		h.waitFor(t, "after")
		require.Eventually(t, func() bool { return logged.contains("Observed a panic") && logged.contains(boom) },
			10*time.Second, time.Millisecond, "klog's logger got %v", logged.get())
	})
}

// errorsOnly is a logr sink that shows errors only, as a controller's logger set to its error
// level does (zap at error level drops every Info): it keeps what Error is called with.
type errorsOnly struct{ got *lines }

func (errorsOnly) Init(logr.RuntimeInfo)  {}
func (errorsOnly) Enabled(level int) bool { return false }
func (errorsOnly) Info(int, string, ...any) {
	panic("an Info line reached a sink that is not enabled for any")
}
func (s errorsOnly) Error(err error, msg string, kv ...any) {
	s.got.add(msg, fmt.Sprint(err, kv))
}
func (s errorsOnly) WithValues(...any) logr.LogSink { return s }
func (s errorsOnly) WithName(string) logr.LogSink   { return s }

// docs/semantics.md "Visibility", "Levels": a refusal the reflector cannot ride out by itself —
// here the 403 RBAC answers a LIST with — reaches the informer's logr.Logger as an Error, as
// client-go reports it ("Failed to watch"), so a controller whose logger shows errors only sees
// it; a transient failure before it (a 503) stays at info, and the logger sees nothing of it.
func TestARefusalIsALogrError(t *testing.T) {
	var lists atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if lists.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the server is shutting down","reason":"ServiceUnavailable","code":503}`)
			return
		}
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"configmaps is forbidden: User \"ctl\" cannot list resource \"configmaps\"","reason":"Forbidden","code":403}`)
	}))
	t.Cleanup(srv.Close)
	var got lines
	logger := logr.New(errorsOnly{&got})
	opts := informer.Options{Log: &logger}
	opts.Policy.Backoff = backoff.Backoff{Duration: 100 * time.Millisecond, Factor: 1, Steps: 100}
	inf, err := informer.NewHTTP(httpapi.Config{Client: srv.Client(), Server: srv.URL, Decoder: httpapi.Typed(scheme.Scheme),
		Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}}, opts)
	require.NoError(t, err)
	run(t, inf)
	require.Eventually(t, func() bool { return got.contains("forbidden") }, 10*time.Second, time.Millisecond,
		"the 403 never reached the logger as an error: %v", got.get())
	require.True(t, got.contains("list-rejected"), "the error line names its cause: %v", got.get())
	require.False(t, got.contains("shutting down"), "the transient 503 is no error: %v", got.get())
}

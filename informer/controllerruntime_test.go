package informer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/sim"
)

// frontLog is a reverse proxy in front of the simulator that records each request's
// User-Agent and URL.
type frontLog struct {
	mu   sync.Mutex
	sent []string
}

func (f *frontLog) start(t *testing.T, upstream string) string {
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.sent = append(f.sent, r.Header.Get("User-Agent")+" "+r.URL.RequestURI())
		f.mu.Unlock()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL
}

func (f *frontLog) get() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...)
}

// crListWatch is the ListerWatcher controller-runtime's cache hands its NewInformer for a typed
// object restricted to a namespace and a label selector: a REST client from the manager's
// rest.Config, the namespace in the request, the selector applied to every request's options.
func crListWatch(t *testing.T, cfg *rest.Config, namespace, selector string) cache.ListerWatcher {
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	rc := cs.CoreV1().RESTClient()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return rc.Get().Namespace(namespace).Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch, o.LabelSelector = true, selector
			return rc.Get().Namespace(namespace).Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Watch(ctx)
		},
	}
}

// ForRESTConfig's NewInformer reads the namespace and selector controller-runtime's
// ListerWatcher would request from one probe LIST that its config's transport takes back, and
// lists and watches exactly that over rewatch's HTTP transport.
func TestForRESTConfigReadsWhatTheListerWatcherWouldRequest(t *testing.T) {
	s, simURL := startSim(t, 0)
	for _, ns := range []string{"default", "other"} {
		for _, app := range []string{"yes", "no"} {
			_, err := s.CreateWithLabels(sim.ConfigMaps, ns, app, map[string]string{"app": app}, nil)
			require.NoError(t, err)
		}
	}
	var log frontLog
	cfg, newInformer, err := informer.ForRESTConfig(&rest.Config{Host: log.start(t, simURL)}, nil, quiet)
	require.NoError(t, err)
	inf := newInformer(crListWatch(t, cfg, "default", "app=yes"), &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	require.IsType(t, &informer.Informer{}, inf)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	require.Equal(t, []string{"default/yes"}, inf.GetStore().ListKeys())
	_, err = inf.GetIndexer().ByIndex(cache.NamespaceIndex, "default")
	require.NoError(t, err, "controller-runtime's indexers are the informer's")

	_, err = s.CreateWithLabels(sim.ConfigMaps, "default", "late", map[string]string{"app": "yes"}, nil)
	require.NoError(t, err)
	_, err = s.CreateWithLabels(sim.ConfigMaps, "default", "late-no", map[string]string{"app": "no"}, nil)
	require.NoError(t, err)
	_, err = s.CreateWithLabels(sim.ConfigMaps, "other", "late", map[string]string{"app": "yes"}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok, _ := inf.GetStore().GetByKey("default/late"); return ok }, time.Minute, time.Millisecond)
	sent := log.get()
	require.NotEmpty(t, sent)
	for _, line := range sent {
		i := strings.LastIndex(line, " ")
		ua, uri := line[:i], line[i+1:]
		require.Equal(t, rest.DefaultKubernetesUserAgent(), ua, "the ListerWatcher's User-Agent: %s", uri)
		u, err := url.Parse(uri)
		require.NoError(t, err)
		require.Equal(t, "/api/v1/namespaces/default/configmaps", u.Path)
		require.Equal(t, "app=yes", u.Query().Get("labelSelector"))
		require.NotEqual(t, "1", u.Query().Get("limit"), "the probe reached the server")
	}
	require.ElementsMatch(t, []string{"default/yes", "default/late"}, inf.GetStore().ListKeys())
	for _, key := range []string{"default/yes", "default/late"} { // from the LIST and from the watch
		obj, _, err := inf.GetStore().GetByKey(key)
		require.NoError(t, err)
		require.Empty(t, obj.(*corev1.ConfigMap).GroupVersionKind(), "typed objects come without their kind, as client-go decodes them")
	}
}

// A ListerWatcher whose requests do not go through the returned config — a manager given the
// rest.Config ForRESTConfig was given, as an existing controller passes it, or an HTTPClient of
// its own — gets no informer that reads otherwise: the informer refuses what controller-runtime
// sets as it builds one (its transform, its watch-error handler) with the error that says what
// to pass, so the cache's GetInformer fails with it, and were it run it would say so at error
// level and stop.
func TestForRESTConfigRefusesAManagerGivenAnotherConfig(t *testing.T) {
	s, simURL := startSim(t, 0)
	_, err := s.CreateWithLabels(sim.ConfigMaps, "default", "yes", map[string]string{"app": "yes"}, nil)
	require.NoError(t, err)
	_, newInformer, err := informer.ForRESTConfig(&rest.Config{Host: simURL}, nil, informer.Options{})
	require.NoError(t, err)
	inf := newInformer(crListWatch(t, &rest.Config{Host: simURL}, "default", "app=yes"), &corev1.ConfigMap{}, 0, cache.Indexers{})
	err = inf.SetTransform(func(obj any) (any, error) { return obj, nil })
	require.Error(t, err)
	for _, says := range []string{"give ctrl.NewManager that rest.Config", "ForRESTConfig's first result", "not the one ForRESTConfig was given"} {
		require.ErrorContains(t, err, says)
	}
	require.ErrorContains(t, inf.SetWatchErrorHandlerWithContext(func(context.Context, *cache.Reflector, error) {}), "ForRESTConfig returned")

	var errs lines
	logger := logr.New(errorsOnly{&errs})
	ctx := logr.NewContext(t.Context(), logger)
	inf.RunWithContext(ctx) // returns at once
	require.True(t, errs.contains("ForRESTConfig returned"), "the error at error level, through the manager's logger: %v", errs.get())
	require.True(t, inf.IsStopped())
}

// A metadata-only example without its kind has no HTTP path: the informer reads through
// controller-runtime's ListerWatcher, lists what it asks for, and says so when it runs, to the
// logger it runs with (the manager's) — not at construction, to another.
func TestForRESTConfigMetadataWithoutKindReadsThroughTheListerWatcher(t *testing.T) {
	_, simURL := startSim(t, 2)
	cfg, newInformer, err := informer.ForRESTConfig(&rest.Config{Host: simURL}, nil, informer.Options{})
	require.NoError(t, err)
	mc, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	res := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	}
	inf := newInformer(lw, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	var said lines
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), funcr.New(said.add, funcr.Options{})))
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	informer.SyncedWithin(t, inf.HasSynced)
	require.Len(t, inf.GetStore().ListKeys(), 2)
	require.True(t, said.contains("reads through controller-runtime's ListerWatcher"), "said %v", said.get())
}

// A metadata-only informer reads PartialObjectMetadata over the HTTP transport, each object
// given the example's kind, as controller-runtime's metadata ListerWatcher gives it.
func TestForRESTConfigMetadataOnly(t *testing.T) {
	s, simURL := startSim(t, 2)
	var log frontLog
	cfg, newInformer, err := informer.ForRESTConfig(&rest.Config{Host: log.start(t, simURL)}, nil, quiet)
	require.NoError(t, err)
	mc, err := metadata.NewForConfig(cfg)
	require.NoError(t, err)
	res := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return res.Watch(ctx, o) },
	}
	example := &metav1.PartialObjectMetadata{}
	example.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	inf := newInformer(lw, example, 0, cache.Indexers{})
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	_, err = s.Create(sim.ConfigMaps, "default", "late", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok, _ := inf.GetStore().GetByKey("default/late"); return ok }, time.Minute, time.Millisecond)
	for _, key := range []string{"default/cm-0", "default/late"} {
		obj, ok, err := inf.GetStore().GetByKey(key)
		require.NoError(t, err)
		require.True(t, ok, key)
		require.Equal(t, corev1.SchemeGroupVersion.WithKind("ConfigMap"), obj.(*metav1.PartialObjectMetadata).GroupVersionKind(), key)
	}
	for _, line := range log.get() {
		require.True(t, strings.HasPrefix(line, rest.DefaultKubernetesUserAgent()+" "), "the ListerWatcher's User-Agent: %s", line)
	}
}

// ControllerRuntime.Stats reaches every informer NewInformer made for a type, one per namespace
// controller-runtime's cache watches (its multi-namespace informer wraps them, out of reach of
// a type assertion), and none of another type.
func TestControllerRuntimeStatsByType(t *testing.T) {
	s, simURL := startSim(t, 0)
	for _, ns := range []string{"default", "other"} {
		_, err := s.Create(sim.ConfigMaps, ns, "a", nil)
		require.NoError(t, err)
	}
	cr, err := informer.NewControllerRuntime(&rest.Config{Host: simURL}, nil, quiet)
	require.NoError(t, err)
	for _, ns := range []string{"default", "other"} {
		inf := cr.NewInformer(crListWatch(t, cr.RESTConfig, ns, ""), &corev1.ConfigMap{}, 0, cache.Indexers{})
		run(t, inf)
		informer.SyncedWithin(t, inf.HasSynced)
	}
	stats := cr.Stats(&corev1.ConfigMap{})
	require.Len(t, stats, 2)
	for _, ns := range []string{"default", "other"} {
		st, ok := stats[ns]
		require.True(t, ok, "no Stats for namespace %s: %v", ns, stats)
		require.True(t, st.Synced, ns)
		require.Equal(t, 1, st.Objects, ns)
		require.Equal(t, 1, st.Lists, ns)
	}
	require.Empty(t, cr.Stats(&corev1.Secret{}))
}

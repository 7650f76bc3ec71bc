package controllers

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/faultproxy"
)

// sentRequest is one request that reached the wire: who sent it and what it asked for.
type sentRequest struct {
	userAgent string
	url       *url.URL
}

// wireLog records every request a rest.Config's transport sends.
type wireLog struct {
	mu   sync.Mutex
	sent []sentRequest
	rt   http.RoundTripper
}

func (w *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	u := *r.URL
	w.mu.Lock()
	w.sent = append(w.sent, sentRequest{r.Header.Get("User-Agent"), &u})
	w.mu.Unlock()
	return w.rt.RoundTrip(r)
}

func (w *wireLog) requests(resource string) []sentRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []sentRequest
	for _, s := range w.sent {
		if strings.HasSuffix(s.url.Path, "/"+resource) {
			out = append(out, s)
		}
	}
	return out
}

// informer.ForRESTConfig in a controller-runtime manager: every informer reads over rewatch's
// HTTP transport (each answers what its transport negotiated, protobuf as controller-runtime asks
// for built-in types; its requests carry controller-runtime's User-Agent; and the LIST
// controller-runtime's ListerWatcher was asked for as a probe never reaches the server), and what controller-runtime
// asks of its ListerWatchers holds: DefaultNamespaces (two namespaces, one informer each), a
// ByObject label selector on ConfigMaps and a ByObject field selector on Secrets, on the
// initial state and on the watch after it. Nothing outside them is ever requested or cached.
func TestForRESTConfigHonoursNamespacesAndSelectors(t *testing.T) {
	b := shared.Get(t)
	ns1, ns2, other := namespace(t, b, "crhttp-a"), namespace(t, b, "crhttp-b"), namespace(t, b, "crhttp-other")
	cs := direct(t, b)
	ctx := t.Context()
	for _, ns := range []string{ns1, ns2, other} {
		createConfigMap(t, cs, ns, "in", map[string]string{"app": "yes"})
		createConfigMap(t, cs, ns, "out", map[string]string{"app": "no"})
		createSecret(t, cs, ns, "keep")
		createSecret(t, cs, ns, "drop")
	}

	wire := &wireLog{rt: b.Transport()}
	base := &rest.Config{Host: b.URL(), Transport: wire, QPS: 500, Burst: 1000}
	cr, err := informer.NewControllerRuntime(base, nil, informer.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		built []toolscache.SharedIndexInformer
	)
	mgr, err := ctrl.NewManager(cr.RESTConfig, manager.Options{
		Cache: crcache.Options{
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				inf := cr.NewInformer(lw, obj, resync, idx)
				mu.Lock()
				built = append(built, inf)
				mu.Unlock()
				return inf
			},
			DefaultNamespaces: map[string]crcache.Config{ns1: {}, ns2: {}},
			ByObject: map[client.Object]crcache.ByObject{
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"app": "yes"})},
				&corev1.Secret{}:    {Field: fields.OneTermEqualSelector("metadata.name", "keep")},
			},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	// The informers are made before the manager starts, as a controller's watches make them.
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		_, err := mgr.GetCache().GetInformer(ctx, obj)
		require.NoError(t, err)
	}
	startManager(t, mgr)

	cached := func(list client.ObjectList) []string {
		require.NoError(t, mgr.GetCache().List(ctx, list))
		out := names(list)
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{ns1 + "/in", ns2 + "/in"}, cached(&corev1.ConfigMapList{}))
	require.Equal(t, []string{ns1 + "/keep", ns2 + "/keep"}, cached(&corev1.SecretList{}))

	// The watch after the initial state keeps the selector: a configmap relabelled into it
	// arrives, one in another namespace never does.
	relabel(t, cs, ns1, "out", "yes")
	createConfigMap(t, cs, other, "late", map[string]string{"app": "yes"})
	createConfigMap(t, cs, ns2, "late", map[string]string{"app": "yes"})
	require.Eventually(t, func() bool {
		return slices.Equal([]string{ns1 + "/in", ns1 + "/out", ns2 + "/in", ns2 + "/late"}, cached(&corev1.ConfigMapList{}))
	}, time.Minute, 50*time.Millisecond, "the cache has %v", cached(&corev1.ConfigMapList{}))

	for resource, want := range map[string]url.Values{
		"configmaps": {"labelSelector": {"app=yes"}},
		"secrets":    {"fieldSelector": {"metadata.name=keep"}},
	} {
		sent := wire.requests(resource)
		require.NotEmpty(t, sent)
		namespaces := map[string]bool{}
		for _, s := range sent {
			require.Equal(t, rest.DefaultKubernetesUserAgent(), s.userAgent, "%s: controller-runtime's User-Agent", s.url)
			for k := range want {
				require.Equal(t, want.Get(k), s.url.Query().Get(k), s.url.String())
			}
			require.NotEqual(t, "1", s.url.Query().Get("limit"), "%s: the probe reached the wire", s.url)
			ns, _, _ := strings.Cut(strings.TrimPrefix(s.url.Path, "/api/v1/namespaces/"), "/")
			namespaces[ns] = true
		}
		require.Equal(t, map[string]bool{ns1: true, ns2: true}, namespaces, resource)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, built, 4, "one informer per type and namespace")
	for _, inf := range built {
		require.IsType(t, &informer.Informer{}, inf)
		require.Equal(t, "protobuf", inf.(*informer.Informer).Stats().AnsweredFormat, "only rewatch's HTTP transport reads")
	}
	// The cache's GetInformer hands out controller-runtime's multi-namespace wrapper; the
	// ControllerRuntime reaches each informer's Stats by type, per namespace.
	wrapped, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	_, isRewatch := wrapped.(*informer.Informer)
	require.False(t, isRewatch, "controller-runtime wraps the informers of several namespaces")
	for _, obj := range []runtime.Object{&corev1.ConfigMap{}, &corev1.Secret{}} {
		stats := cr.Stats(obj)
		require.Len(t, stats, 2, "%T", obj)
		for _, ns := range []string{ns1, ns2} {
			require.True(t, stats[ns].Synced, "%T in %s", obj, ns)
			require.Equal(t, "protobuf", stats[ns].AnsweredFormat, "%T in %s", obj, ns)
		}
	}
}

// A manager given the rest.Config ForRESTConfig was given — as an existing controller passes
// its config — rather than the one it returned, gets no informer reading otherwise: the cache's
// GetInformer fails with the error that says which config to pass.
func TestForRESTConfigRefusesAManagerGivenTheOriginalConfig(t *testing.T) {
	b := shared.Get(t)
	base := &rest.Config{Host: b.URL(), Transport: b.Transport()}
	_, newInformer, err := informer.ForRESTConfig(base, nil, informer.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(base, manager.Options{
		Cache:                  crcache.Options{NewInformer: newInformer},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	_, err = mgr.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{})
	require.Error(t, err)
	require.ErrorContains(t, err, "give ctrl.NewManager that rest.Config")
}

func createConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, lbls map[string]string) {
	_, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbls}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func createSecret(t *testing.T, cs kubernetes.Interface, ns, name string) {
	_, err := cs.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func relabel(t *testing.T, cs kubernetes.Interface, ns, name, app string) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Labels = map[string]string{"app": app}
	_, err = cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// names is the namespace/name of every item of a typed list.
func names(list client.ObjectList) []string {
	var out []string
	switch l := list.(type) {
	case *corev1.ConfigMapList:
		for _, o := range l.Items {
			out = append(out, o.Namespace+"/"+o.Name)
		}
	case *corev1.SecretList:
		for _, o := range l.Items {
			out = append(out, o.Namespace+"/"+o.Name)
		}
	}
	return out
}

// relistCounter counts what a handler without a resync period is given.
type relistCounter struct {
	mu                  sync.Mutex
	adds, updates, noop int
	added               map[string]bool
}

func (c *relistCounter) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.adds++
			c.added[obj.(*corev1.ConfigMap).Name] = true
		},
		UpdateFunc: func(old, obj any) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.updates++
			if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
				c.noop++
			}
		},
	}
}

func (c *relistCounter) has(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.added[name]
}

// docs/semantics.md, "Relists": through ForRESTConfig, a 410 on controller-runtime's watch
// costs one LIST over rewatch's HTTP transport, and the relist of objects that did not change
// hands the controller's handler nothing (controller-runtime's default informer hands it an
// update per cached object).
func TestForRESTConfigRelistHandsOverOnlyChanges(t *testing.T) {
	b := shared.Get(t)
	ns := namespace(t, b, "crhttp-relist")
	cs := direct(t, b)
	const objects = 30
	for i := range objects {
		createConfigMap(t, cs, ns, fmt.Sprintf("cm-%d", i), nil)
	}
	p, base := proxied(t, b)
	expired := p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, PathContains: "/namespaces/" + ns + "/configmaps",
		Fault: faultproxy.WatchError(faultproxy.Expired()).AfterEvents(1)})
	logRequestsOnFailure(t, "relist", p)
	cfg, newInformer, err := informer.ForRESTConfig(base, nil, informer.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Cache:                  crcache.Options{NewInformer: newInformer, DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	ctx := t.Context()
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	c := &relistCounter{added: map[string]bool{}}
	_, err = inf.AddEventHandler(c.handler())
	require.NoError(t, err)
	startManager(t, mgr)

	// One event on the watch, then its 410: the informer relists.
	createConfigMap(t, cs, ns, "trigger", nil)
	require.Eventually(t, func() bool { return expired.Fired() == 1 }, time.Minute, 10*time.Millisecond, "the 410 never reached the informer")
	// An object created after the 410 arrives after the relist that follows it.
	createConfigMap(t, cs, ns, "marker", nil)
	require.Eventually(t, func() bool { return c.has("marker") }, time.Minute, 10*time.Millisecond, "the marker never arrived")

	lists := 0
	for _, r := range p.Requests() {
		if !strings.HasSuffix(r.Path, "/namespaces/"+ns+"/configmaps") {
			continue
		}
		require.Empty(t, r.Query.Get("sendInitialEvents"), "the HTTP transport lists")
		if r.Kind == faultproxy.List && r.Status == http.StatusOK {
			lists++
		}
	}
	require.Equal(t, 2, lists, "the initial LIST and the relist's")
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(t, objects+2, c.adds, "the objects, the trigger and the marker")
	require.Zero(t, c.noop, "no update for an unchanged object")
	require.Zero(t, c.updates)
}

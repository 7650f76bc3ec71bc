package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/sim"
)

// backend is an API server the scenarios run against.
type backend interface {
	name() string
	url() string
	// transport reaches the server with its credentials; the fault proxy uses it upstream.
	transport() http.RoundTripper
	put(ctx context.Context, gvr schema.GroupVersionResource, ns, name, value string) error
	del(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error
	// list is a fresh LIST of the server: key → resourceVersion.
	list(ctx context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error)
	// expireHistory makes every resourceVersion seen so far unusable for a watch, the way the
	// server does it: etcd compaction on the real server, Compact on the simulator.
	expireHistory(ctx context.Context) error
}

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets    = sim.Widgets
)

// ---- simulator ----

type simBackend struct {
	s *sim.Server
	u string
}

func newSimBackend(t *testing.T) backend { return newSimBackendWithBookmarks(t, 2*time.Second) }

// newSimBackendWithBookmarks sets how often the simulator sends BOOKMARKs; each one advances
// the reflector's last RV, so a scenario that needs a stale RV asks for them rarely.
func newSimBackendWithBookmarks(t *testing.T, every time.Duration) backend {
	s := sim.New(sim.Options{Resources: []schema.GroupVersionResource{sim.ConfigMaps, sim.Widgets}, BookmarkInterval: every, TooLargeWait: 50 * time.Millisecond})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return &simBackend{s: s, u: u}
}

func (b *simBackend) name() string                        { return "sim" }
func (b *simBackend) url() string                         { return b.u }
func (b *simBackend) transport() http.RoundTripper        { return http.DefaultTransport }
func (b *simBackend) expireHistory(context.Context) error { b.s.Compact(); return nil }

func (b *simBackend) put(_ context.Context, gvr schema.GroupVersionResource, ns, name, value string) error {
	data := map[string]string{"v": value}
	if _, ok := b.s.Snapshot(gvr)[ns+"/"+name]; ok {
		_, err := b.s.Update(gvr, ns, name, data)
		return err
	}
	_, err := b.s.Create(gvr, ns, name, data)
	return err
}

func (b *simBackend) del(_ context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	_, err := b.s.Delete(gvr, ns, name)
	return err
}

func (b *simBackend) list(_ context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range b.s.Snapshot(gvr) {
		if len(k) > len(ns) && k[:len(ns)+1] == ns+"/" {
			out[k] = v
		}
	}
	return out, nil
}

// ---- real kube-apiserver ----

type realBackend struct {
	s   *apiserver.Server
	cs  *kubernetes.Clientset
	dyn dynamic.Interface
	rt  http.RoundTripper
}

var (
	realOnce   sync.Once
	realShared *realBackend
	realErr    error
	realStop   func()
)

// sharedReal starts one real server for the whole package (a start costs seconds); the
// simulator is cheap and started per test.
func sharedReal(t *testing.T) backend {
	t.Helper()
	realOnce.Do(func() {
		realShared, realErr = startReal(apiserver.Options{}, true)
	})
	if realErr != nil {
		requireOrSkip(t, realErr)
	}
	return realShared
}

// requireOrSkip fails under CI=true and skips elsewhere, as the developers' guide asks.
func requireOrSkip(t *testing.T, err error) {
	t.Helper()
	if ci() {
		t.Fatalf("real kube-apiserver unavailable under CI: %v", err)
	}
	t.Skipf("real kube-apiserver unavailable (run scripts/build-apiserver.sh): %v", err)
}

func startReal(opts apiserver.Options, shared bool) (*realBackend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, err
	}
	s, err := apiserver.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	if shared {
		realStop = s.Stop
	}
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		s.Stop()
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(s.RESTConfig())
	if err != nil {
		s.Stop()
		return nil, err
	}
	rt, err := rest.TransportFor(s.RESTConfig())
	if err != nil {
		s.Stop()
		return nil, err
	}
	b := &realBackend{s: s, cs: cs, dyn: dyn, rt: rt}
	if err := b.installWidgetCRD(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("install CRD: %w", err)
	}
	return b, nil
}

func (b *realBackend) name() string                            { return "kube-apiserver" }
func (b *realBackend) url() string                             { return b.s.URL() }
func (b *realBackend) transport() http.RoundTripper            { return b.rt }
func (b *realBackend) expireHistory(ctx context.Context) error { return b.s.Compact(ctx) }

func (b *realBackend) ensureNamespace(ctx context.Context, ns string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (b *realBackend) put(ctx context.Context, gvr schema.GroupVersionResource, ns, name, value string) error {
	r := b.dyn.Resource(gvr).Namespace(ns)
	obj, err := r.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": kindOf(gvr),
			"metadata": map[string]any{"name": name, "namespace": ns},
			"data":     map[string]any{"v": value},
		}}
		_, err = r.Create(ctx, u, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	obj.Object["data"] = map[string]any{"v": value}
	_, err = r.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (b *realBackend) del(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return b.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (b *realBackend) list(ctx context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error) {
	l, err := b.dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range l.Items {
		out[it.GetNamespace()+"/"+it.GetName()] = it.GetResourceVersion()
	}
	return out, nil
}

func kindOf(gvr schema.GroupVersionResource) string {
	if gvr.Resource == "widgets" {
		return "Widget"
	}
	return "ConfigMap"
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installWidgetCRD installs the same widgets.demo.rewatch.dev resource the simulator serves,
// with a free-form data field, and waits until it is Established.
func (b *realBackend) installWidgetCRD(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + widgets.Group},
		"spec": map[string]any{
			"group": widgets.Group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": widgets.Version, "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	if _, err := b.dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for ctx.Err() == nil {
		got, err := b.dyn.Resource(crdGVR).Get(ctx, "widgets."+widgets.Group, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					// Discovery and the handler need a moment after Established.
					_, err := b.dyn.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
					if err == nil {
						return nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx.Err()
}

func apiserverNoWatchCache() apiserver.Options {
	return apiserver.Options{ExtraArgs: []string{"--watch-cache=false"}}
}

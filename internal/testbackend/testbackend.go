// Package testbackend gives the e2e and soak tests one way to drive an API server, real or
// simulated: write objects, take a fresh LIST, and expire history the way that server does.
// It is test support, used only by tests.
package testbackend

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// ConfigMaps and Widgets are the resources both backends serve.
var (
	ConfigMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	Widgets    = sim.Widgets
)

// Backend is an API server the tests run against.
type Backend interface {
	Name() string
	URL() string
	// Transport reaches the server with its credentials; the fault proxy uses it upstream.
	Transport() http.RoundTripper
	EnsureNamespace(ctx context.Context, ns string) error
	// Put creates or updates ns/name with data {"v": value}.
	Put(ctx context.Context, gvr schema.GroupVersionResource, ns, name, value string) error
	Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error
	// List is a fresh LIST of the server: key → resourceVersion.
	List(ctx context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error)
	// ExpireHistory makes every resourceVersion seen so far unusable for a watch, the way the
	// server does it: etcd compaction on the real server, Compact on the simulator.
	ExpireHistory(ctx context.Context) error
}

// ---- simulator ----

// Sim is the in-process simulator.
type Sim struct {
	Server *sim.Server
	url    string
}

// NewSim starts a simulator serving ConfigMaps and Widgets; Close it with Server.Close.
func NewSim(opts sim.Options) (*Sim, error) {
	opts.Resources = []schema.GroupVersionResource{sim.ConfigMaps, sim.Widgets}
	s := sim.New(opts)
	u, err := s.Start()
	if err != nil {
		return nil, err
	}
	return &Sim{Server: s, url: u}, nil
}

func (b *Sim) Name() string                                  { return "sim" }
func (b *Sim) URL() string                                   { return b.url }
func (b *Sim) Transport() http.RoundTripper                  { return http.DefaultTransport }
func (b *Sim) EnsureNamespace(context.Context, string) error { return nil }
func (b *Sim) ExpireHistory(context.Context) error           { b.Server.Compact(); return nil }

func (b *Sim) Put(_ context.Context, gvr schema.GroupVersionResource, ns, name, value string) error {
	data := map[string]string{"v": value}
	if _, ok := b.Server.Snapshot(gvr)[ns+"/"+name]; ok {
		_, err := b.Server.Update(gvr, ns, name, data)
		return err
	}
	_, err := b.Server.Create(gvr, ns, name, data)
	return err
}

func (b *Sim) Delete(_ context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	_, err := b.Server.Delete(gvr, ns, name)
	return err
}

func (b *Sim) List(_ context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range b.Server.Snapshot(gvr) {
		if strings.HasPrefix(k, ns+"/") {
			out[k] = v
		}
	}
	return out, nil
}

// ---- real kube-apiserver ----

// Real is a real kube-apiserver and etcd, with the Widgets CRD installed.
type Real struct {
	Server *apiserver.Server
	cs     *kubernetes.Clientset
	dyn    dynamic.Interface
	rt     http.RoundTripper
}

// StartReal builds the servers if needed, starts them and installs the Widgets CRD. The caller
// stops it with Server.Stop.
func StartReal(ctx context.Context, opts apiserver.Options) (*Real, error) {
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, err
	}
	s, err := apiserver.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	b, err := connect(ctx, s)
	if err != nil {
		s.Stop()
		return nil, err
	}
	return b, nil
}

func connect(ctx context.Context, s *apiserver.Server) (*Real, error) {
	rc := rest.CopyConfig(s.RESTConfig())
	// Writers must not be slowed by client-go's default 5 QPS limiter.
	rc.QPS, rc.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(s.RESTConfig())
	if err != nil {
		return nil, err
	}
	b := &Real{Server: s, cs: cs, dyn: dyn, rt: rt}
	if err := b.installWidgetCRD(ctx); err != nil {
		return nil, fmt.Errorf("install CRD: %w", err)
	}
	return b, nil
}

// RecreateCluster deletes the cluster and creates another at the same address, with the
// Widgets CRD installed again (apiserver.Server.RecreateCluster).
func (b *Real) RecreateCluster(ctx context.Context) error {
	if err := b.Server.RecreateCluster(ctx); err != nil {
		return err
	}
	return b.installWidgetCRD(ctx)
}

// Clientset is an admin clientset of the server, for what the Backend methods do not say (a
// uid, a status).
func (b *Real) Clientset() kubernetes.Interface { return b.cs }

func (b *Real) Name() string                            { return "kube-apiserver" }
func (b *Real) URL() string                             { return b.Server.URL() }
func (b *Real) Transport() http.RoundTripper            { return b.rt }
func (b *Real) ExpireHistory(ctx context.Context) error { return b.Server.Compact(ctx) }

func (b *Real) EnsureNamespace(ctx context.Context, ns string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (b *Real) Put(ctx context.Context, gvr schema.GroupVersionResource, ns, name, value string) error {
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

func (b *Real) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	return b.dyn.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (b *Real) List(ctx context.Context, gvr schema.GroupVersionResource, ns string) (map[string]string, error) {
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
// with a free-form data field, and waits until it is served.
func (b *Real) installWidgetCRD(ctx context.Context) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + Widgets.Group},
		"spec": map[string]any{
			"group": Widgets.Group, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": Widgets.Version, "served": true, "storage": true,
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
		// Established is not enough: the handler serves a moment later.
		if _, err := b.dyn.Resource(Widgets).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ctx.Err()
}

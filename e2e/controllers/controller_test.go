package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/testbackend"
)

const sources = 20

// copier reconciles configmap src-N into status-src-N, copying data.v. It reads through the
// manager's cache (the informers under test) and writes with put, straight to the server.
type copier struct {
	c   client.Client
	put func(ctx context.Context, ns, name, v string) error
}

func (r copier) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var src corev1.ConfigMap
	if err := r.c.Get(ctx, req.NamespacedName, &src); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	name := "status-" + src.Name
	var cur corev1.ConfigMap
	err := r.c.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: name}, &cur)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	if err == nil && cur.Data["v"] == src.Data["v"] {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.put(ctx, src.Namespace, name, src.Data["v"])
}

// runManager starts a controller-runtime manager with the copier on ns through cfg;
// newInformer nil means controller-runtime's default informers.
func runManager(t *testing.T, b testbackend.Backend, cfg *rest.Config, ns string, newInformer func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer) {
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Cache:                  crcache.Options{NewInformer: newInformer, DefaultNamespaces: map[string]crcache.Config{ns: {}}},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	isSource := predicate.NewPredicateFuncs(func(o client.Object) bool { return strings.HasPrefix(o.GetName(), "src-") })
	require.NoError(t, ctrl.NewControllerManagedBy(mgr).Named(fmt.Sprintf("copier-%s", ns)).
		For(&corev1.ConfigMap{}, builder.WithPredicates(isSource)).
		WithOptions(controller.Options{SkipNameValidation: ptr(true)}).
		Complete(copier{c: mgr.GetClient(), put: func(ctx context.Context, ns, name, v string) error {
			return b.Put(ctx, configMaps, ns, name, v)
		}}))
	startManager(t, mgr)
}

func ptr[T any](v T) *T { return &v }

var configMaps = testbackend.ConfigMaps

// writeRounds writes every source rounds times and returns the values the status configmaps
// must end with.
func writeRounds(t *testing.T, b testbackend.Backend, ns string, rounds int, pause time.Duration) map[string]string {
	want := map[string]string{}
	for round := range rounds {
		for i := range sources {
			name := fmt.Sprintf("src-%d", i)
			v := fmt.Sprintf("r%d-%d", round, i)
			require.NoError(t, b.Put(t.Context(), configMaps, ns, name, v))
			want["status-"+name] = v
		}
		time.Sleep(pause)
	}
	return want
}

// reconciled waits until every status configmap holds the value last written to its source.
func reconciled(t *testing.T, b testbackend.Backend, ns string, want map[string]string) {
	cs := direct(t, b)
	var last map[string]string
	require.Eventually(t, func() bool {
		got, err := values(t.Context(), cs, ns)
		if err != nil {
			return false
		}
		last = got
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}, 2*time.Minute, 50*time.Millisecond, "not every change was reconciled: have %v", last)
}

// docs/semantics.md, the watch rows, inside controller-runtime: a manager whose cache builds
// rewatch's informers reconciles every change through the storm's fault mix with one LIST plus
// one per 410; the same manager with controller-runtime's default informers, through the same
// faults, lists more.
func TestControllerRuntimeManagerThroughTheStorm(t *testing.T) {
	t.Parallel()
	forEachBackend(t, false, func(t *testing.T, b testbackend.Backend) {
		lists := map[string]int{}
		for _, kind := range []string{"rewatch", "controller-runtime default"} {
			ns := namespace(t, b, "crm")
			writeRounds(t, b, ns, 1, 0)
			p, cfg := proxied(t, b)
			var newInformer func(cache.ListerWatcher, runtime.Object, time.Duration, cache.Indexers) cache.SharedIndexInformer
			if kind == "rewatch" {
				newInformer = informer.WithOptions(informer.Options{Logger: slog.New(slog.DiscardHandler)})
			}
			expired, allFired := storm(p)
			runManager(t, b, cfg, ns, newInformer)
			writeRounds(t, b, ns, 5, 300*time.Millisecond)
			untilFired(t, b, ns, 300*time.Millisecond, 2*time.Minute, map[string]func() bool{kind: allFired})
			want := writeRounds(t, b, ns, 1, 0)
			reconciled(t, b, ns, want)
			lists[kind] = fullStateTransfers(p)
			t.Logf("%s on %s: %d full-state transfers of configmaps (%d injected 410)", kind, b.Name(), lists[kind], expired)
			if kind == "rewatch" {
				require.LessOrEqual(t, lists[kind], 1+expired, "rewatch's informer listed more than once plus once per 410")
				require.Greater(t, lists[kind], 1, "the 410 never reached the reflector, so the bound was not tested")
			}
		}
		require.Greater(t, lists["controller-runtime default"], lists["rewatch"], "the default informers list more through the same faults")
	})
}

// values is data.v of every configmap in ns, by name, from a fresh LIST.
func values(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Name] = cm.Data["v"]
	}
	return out, nil
}

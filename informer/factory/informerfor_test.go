package factory_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/sim"
)

// byApp indexes ConfigMaps by their app label.
var byApp = cache.Indexers{"byApp": func(obj any) ([]string, error) {
	return []string{obj.(*corev1.ConfigMap).Labels["app"]}, nil
}}

// simWithConfigMaps is a simulated server holding, in namespaces mine and other, a ConfigMap
// labelled app=x, one app=y, and one named "target", and a clientset for it.
func simWithConfigMaps(t *testing.T) (*sim.Server, kubernetes.Interface) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, ns := range []string{"mine", "other"} {
		for name, app := range map[string]string{"x": "x", "y": "y", "target": "x"} {
			_, err := s.CreateWithLabels(sim.ConfigMaps, ns, name, map[string]string{"app": app}, nil)
			require.NoError(t, err)
		}
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	return s, cs
}

func synced(t *testing.T, f *factory.Factory) {
	t.Helper()
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	for typ, ok := range f.WaitForCacheSync(stop) {
		require.True(t, ok, "%v did not sync", typ)
	}
}

// InformerFor with a constructor of the caller's own registers the informer it makes, as
// client-go's factory does: a filtered informer — another namespace, a label selector, a field
// selector — stays filtered and keeps its indexers, whether the constructor is client-go's or
// rewatch's, and the typed accessor hands out that informer.
func TestInformerForHonoursACustomConstructor(t *testing.T) {
	tweak := func(o *metav1.ListOptions) { o.LabelSelector, o.FieldSelector = "app=x", "metadata.name=target" }
	for name, newFunc := range map[string]func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer{
		"client-go's": func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewFilteredConfigMapInformer(c, "mine", resync, byApp, tweak)
		},
		"rewatch's": informer.NewInformerFuncIn(&corev1.ConfigMap{}, "mine", tweak, informer.Options{Indexers: byApp, Logger: quiet.Logger}),
	} {
		t.Run(name, func(t *testing.T) {
			_, cs := simWithConfigMaps(t)
			f := factory.New(cs, 0, quiet, informers.WithNamespace("other"))
			custom := f.InformerFor(&corev1.ConfigMap{}, newFunc)
			require.Same(t, custom, f.InformerFor(&corev1.ConfigMap{}, newFunc), "registered once")
			require.Same(t, custom.GetIndexer(), f.Core().V1().ConfigMaps().Informer().GetIndexer(), "the typed accessor hands out the one registered")
			synced(t, f)
			require.Equal(t, []string{"mine/target"}, custom.GetStore().ListKeys(), "the informer stays filtered")
			got, err := custom.GetIndexer().ByIndex("byApp", "x")
			require.NoError(t, err)
			require.Len(t, got, 1, "the custom index")
			lister := f.Core().V1().ConfigMaps().Lister()
			all, err := lister.List(labels.Everything())
			require.NoError(t, err)
			require.Len(t, all, 1)
		})
	}
}

// ForResource asked before the typed accessor makes the one informer both hand out, named once
// for client-go's informer metrics, which it then reports.
func TestForResourceFirstNamesTheInformerOnce(t *testing.T) {
	s, cs := simWithConfigMaps(t)
	name, err := cache.NewInformerName("rewatch-for-resource-first")
	require.NoError(t, err)
	t.Cleanup(name.Release)
	rec := newRecorder()
	opts := quiet
	opts.InformerMetricsProvider = rec
	f := factory.New(cs, 0, opts, informers.WithInformerName(name))
	generic, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	require.NoError(t, err)
	inf := f.Core().V1().ConfigMaps().Informer()
	require.Same(t, generic.Informer().GetIndexer(), inf.GetIndexer())
	require.IsType(t, &informer.Informer{}, generic.Informer())
	synced(t, f)

	key := "rewatch-for-resource-first /v1, Resource=configmaps"
	listed, err := strconv.ParseFloat(inf.LastSyncResourceVersion(), 64)
	require.NoError(t, err)
	rv, observed := rec.get(key)
	require.Equal(t, listed, rv, "the store's resourceVersion metric")
	require.GreaterOrEqual(t, observed, 6, "a processing time per object listed")
	_, err = s.Create(sim.ConfigMaps, "mine", "late", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, after := rec.get(key); return after > observed }, time.Minute, time.Millisecond)
}

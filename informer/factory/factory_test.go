package factory_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/sim"
)

var quiet = informer.Options{Logger: slog.New(slog.DiscardHandler)}

func names(objs []*corev1.ConfigMap) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Namespace+"/"+o.Name)
	}
	sort.Strings(out)
	return out
}

// A program written against client-go's factory, with client-go's own options, gets rewatch's
// informers from client-go's typed accessors, and they honour the options: only the factory's
// namespace, only what the tweak's label selector selects, the transform applied; the lister's
// namespace index is there; ForResource hands out the same informer; WaitForCacheSync waits.
func TestFactoryWithClientGoOptions(t *testing.T) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, ns := range []string{"mine", "other"} {
		for _, name := range []string{"a", "b"} {
			_, err := s.CreateWithLabels(sim.ConfigMaps, ns, name, map[string]string{"app": "x"}, map[string]string{"k": "v"})
			require.NoError(t, err)
		}
		_, err := s.CreateWithLabels(sim.ConfigMaps, ns, "unlabelled", nil, nil)
		require.NoError(t, err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)

	transform := func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			cm.Data = map[string]string{"transformed": "yes"}
		}
		return obj, nil
	}
	f := factory.New(cs, 0, quiet,
		informers.WithNamespace("mine"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=x" }),
		informers.WithTransform(transform),
		informers.WithCustomResyncConfig(map[metav1.Object]time.Duration{&corev1.ConfigMap{}: time.Second}))
	var sif informers.SharedInformerFactory = f // the one-line swap: the same interface
	cms := sif.Core().V1().ConfigMaps()
	// client-go's typed accessor wraps the factory's informer in a typed view of it.
	require.IsType(t, &informer.Informer{}, sif.InformerFor(&corev1.ConfigMap{}, nil))
	require.Same(t, sif.InformerFor(&corev1.ConfigMap{}, nil).GetIndexer(), cms.Informer().GetIndexer())
	generic, err := sif.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	require.NoError(t, err)
	require.Same(t, cms.Informer().GetIndexer(), generic.Informer().GetIndexer(), "ForResource and the typed accessor share one informer")
	_, err = sif.ForResource(corev1.SchemeGroupVersion.WithResource("bindings"))
	require.Error(t, err, "client-go's factory has no informer for bindings")
	require.Contains(t, cms.Informer().GetIndexer().GetIndexers(), cache.NamespaceIndex)

	// The custom resync period is the handlers' default: a handler added without one is
	// resynced every second.
	resynced := make(chan struct{}, 1)
	_, err = cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(old, obj any) {
		if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
			select {
			case resynced <- struct{}{}:
			default:
			}
		}
	}})
	require.NoError(t, err)
	stop := make(chan struct{})
	sif.Start(stop)
	t.Cleanup(func() { close(stop); sif.Shutdown() })
	synced := sif.WaitForCacheSync(stop)
	require.Equal(t, map[reflect.Type]bool{reflect.TypeOf(&corev1.ConfigMap{}): true}, synced)
	st := f.Stats()[reflect.TypeOf(&corev1.ConfigMap{})]
	require.True(t, st.Synced)
	require.Equal(t, 1, st.Lists)
	require.Equal(t, 2, st.Objects)
	require.Equal(t, "protobuf", st.AnsweredFormat, "protobuf negotiated for a built-in type")

	all, err := cms.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a", "mine/b"}, names(all))
	inNs, err := cms.Lister().ConfigMaps("mine").List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a", "mine/b"}, names(inNs))
	byIndex, err := cms.Informer().GetIndexer().ByIndex(cache.NamespaceIndex, "mine")
	require.NoError(t, err)
	require.Len(t, byIndex, 2, "the namespace index holds the namespace's objects")
	got, err := cms.Lister().ConfigMaps("mine").Get("a")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"transformed": "yes"}, got.Data)
	listed, err := generic.Lister().ByNamespace("mine").List(labels.Everything())
	require.NoError(t, err)
	require.Len(t, listed, 2)

	// A change in the namespace reaches the lister; one elsewhere, or unselected, does not.
	_, err = s.CreateWithLabels(sim.ConfigMaps, "mine", "c", map[string]string{"app": "x"}, nil)
	require.NoError(t, err)
	_, err = s.CreateWithLabels(sim.ConfigMaps, "other", "c", map[string]string{"app": "x"}, nil)
	require.NoError(t, err)
	_, err = s.CreateWithLabels(sim.ConfigMaps, "mine", "d", nil, nil)
	require.NoError(t, err)
	_, err = s.CreateWithLabels(sim.ConfigMaps, "mine", "last", map[string]string{"app": "x"}, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := cms.Lister().ConfigMaps("mine").Get("last"); return err == nil }, 10*time.Second, time.Millisecond)
	all, err = cms.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a", "mine/b", "mine/c", "mine/last"}, names(all))
	select {
	case <-resynced:
	case <-time.After(10 * time.Second):
		t.Fatal("no resync within 10s of a 1s custom resync period")
	}
}

// The factory made with client-go's filtered constructor's arguments reads them as client-go's.
func TestNewFilteredSharedInformerFactory(t *testing.T) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	_, err = s.Create(sim.ConfigMaps, "mine", "a", nil)
	require.NoError(t, err)
	_, err = s.Create(sim.ConfigMaps, "other", "a", nil)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	f := factory.NewFilteredSharedInformerFactory(cs, 0, "mine", nil)
	lister := f.Core().V1().ConfigMaps().Lister()
	require.IsType(t, &informer.Informer{}, f.InformerFor(&corev1.ConfigMap{}, nil))
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	require.True(t, cache.WaitForCacheSync(stop, f.Core().V1().ConfigMaps().Informer().HasSynced))
	all, err := lister.List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a"}, names(all))
}

// A fake clientset has no server to read over HTTP: the factory then makes client-go's own
// informers, as client-go's factory would, so unit tests written with fakes keep working.
func TestFactoryWithFakeClientset(t *testing.T) {
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mine", Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "a"}})
	f := factory.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("mine"))
	cms := f.Core().V1().ConfigMaps()
	require.NotNil(t, cms.Informer())
	generic, err := f.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps"))
	require.NoError(t, err)
	require.Same(t, cms.Informer().GetIndexer(), generic.Informer().GetIndexer())
	require.NotEqual(t, reflect.TypeOf(&informer.Informer{}), reflect.TypeOf(f.InformerFor(&corev1.ConfigMap{}, nil)))
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	require.Equal(t, map[reflect.Type]bool{reflect.TypeOf(&corev1.ConfigMap{}): true}, f.WaitForCacheSync(stop))
	all, err := cms.Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a"}, names(all))
}

// docs/semantics.md, "Persisted cache": a factory given a persisted cache keeps one snapshot per
// informer, named by what it watches, so factories (or types) sharing a directory never read one
// another's. A restarted factory's informer is filled from its own snapshot: its handler hears
// the snapshot's objects as adds in the initial list, then what changed while it was down, and
// its start says it resumed.
func TestFactoryPersistsEachInformersCacheApart(t *testing.T) {
	s := sim.New(sim.Options{BookmarkInterval: 200 * time.Millisecond})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, ns := range []string{"mine", "other"} {
		_, err = s.Create(sim.ConfigMaps, ns, "a", nil)
		require.NoError(t, err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	dir := t.TempDir()
	opts := informer.Options{Logger: quiet.Logger, Persist: persist.Dir(dir)}
	// Pages of one: the collection is larger than the probe's page, and the start resumes
	// from the snapshot rather than take the probe's page as its state.
	opts.Policy.PageSize = 1
	run := func(ns string, h cache.ResourceEventHandler) (*factory.Factory, func()) {
		f := factory.New(cs, 0, opts, informers.WithNamespace(ns))
		inf := f.Core().V1().ConfigMaps().Informer()
		if h != nil {
			_, err := inf.AddEventHandler(h)
			require.NoError(t, err)
		}
		stop := make(chan struct{})
		f.Start(stop)
		require.True(t, cache.WaitForCacheSync(stop, inf.HasSynced))
		return f, func() { close(stop); f.Shutdown() }
	}
	for _, ns := range []string{"mine", "other"} {
		_, stop := run(ns, nil)
		stop() // saves the snapshot
	}
	snaps, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	require.NoError(t, err)
	require.Len(t, snaps, 2, "one snapshot per informer")

	_, err = s.Create(sim.ConfigMaps, "mine", "while-down", nil)
	require.NoError(t, err)
	var mu sync.Mutex
	var adds []string
	f, stop := run("mine", cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(obj any, initial bool) {
		mu.Lock()
		defer mu.Unlock()
		adds = append(adds, fmt.Sprintf("%s initial=%v", obj.(*corev1.ConfigMap).Name, initial))
	}})
	t.Cleanup(stop)
	all, err := f.Core().V1().ConfigMaps().Lister().List(labels.Everything())
	require.NoError(t, err)
	require.Equal(t, []string{"mine/a", "mine/while-down"}, names(all), "its own snapshot, and the change since")
	st := f.Stats()[reflect.TypeOf(&corev1.ConfigMap{})].Start
	require.Equal(t, rewatch.StartResumed, st.Way, "%s", st)
	require.Equal(t, 1, st.Restored)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(adds) == 2
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"a initial=true", "while-down initial=false"}, adds)
}

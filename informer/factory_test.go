package informer_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transport/httpapi"
)

func startSim(t *testing.T, objects int) (*sim.Server, string) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for i := range objects {
		_, err := s.Create(sim.ConfigMaps, "default", "cm-"+strconv.Itoa(i), map[string]string{"i": strconv.Itoa(i)})
		require.NoError(t, err)
	}
	return s, u
}

// sequence records (type, key, resourceVersion) as a handler sees them.
type sequence struct {
	mu    sync.Mutex
	lines []string
}

func (q *sequence) add(kind string, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m := obj.(metav1.Object)
	q.mu.Lock()
	q.lines = append(q.lines, fmt.Sprintf("%s %s/%s %s", kind, m.GetNamespace(), m.GetName(), m.GetResourceVersion()))
	q.mu.Unlock()
}

func (q *sequence) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { q.add("add", obj) },
		UpdateFunc: func(_, obj any) { q.add("update", obj) },
		DeleteFunc: func(obj any) { q.add("delete", obj) },
	}
}

func (q *sequence) get() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]string(nil), q.lines...)
}

// A SharedInformerFactory given rewatch's informer through InformerFor hands it out as its own
// informer and lister for the type; listers, WaitForCacheSync and handlers work unchanged, and
// on the same writes its handler sees exactly what client-go's own informer's handler sees.
// Through the fault proxy, a 429 at watch start and a 429 event cost no further full state.
func TestSharedInformerFactoryInformerFor(t *testing.T) {
	s, simURL := startSim(t, 5)
	p, err := faultproxy.New(faultproxy.Config{Upstream: simURL})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	viaProxy, err := kubernetes.NewForConfig(&rest.Config{Host: p.URL()})
	require.NoError(t, err)
	direct, err := kubernetes.NewForConfig(&rest.Config{Host: simURL})
	require.NoError(t, err)

	ours := informers.NewSharedInformerFactory(viaProxy, 0)
	inf := ours.InformerFor(&corev1.ConfigMap{}, informer.NewInformerFunc(&corev1.ConfigMap{}, quiet))
	require.IsType(t, &informer.Informer{}, inf)
	require.Contains(t, inf.GetIndexer().GetIndexers(), cache.NamespaceIndex, "client-go's typed informers' namespace index, which the lister reads")
	require.Same(t, inf.GetIndexer(), ours.Core().V1().ConfigMaps().Informer().GetIndexer(), "the factory hands out rewatch's informer")
	lister := ours.Core().V1().ConfigMaps().Lister()
	theirs := informers.NewSharedInformerFactory(direct, 0)

	var oursSeen, theirsSeen sequence
	oursReg, err := inf.AddEventHandler(oursSeen.handler())
	require.NoError(t, err)
	theirsReg, err := theirs.Core().V1().ConfigMaps().Informer().AddEventHandler(theirsSeen.handler())
	require.NoError(t, err)

	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.TooManyRequests(1))})
	stop := make(chan struct{})
	ours.Start(stop)
	theirs.Start(stop)
	t.Cleanup(func() { close(stop); ours.Shutdown(); theirs.Shutdown() })
	require.True(t, cache.WaitForCacheSync(stop, oursReg.HasSynced, theirsReg.HasSynced))

	got, err := lister.ConfigMaps("default").Get("cm-3")
	require.NoError(t, err)
	require.Equal(t, "3", got.Data["i"])
	all, err := lister.List(labels.Everything())
	require.NoError(t, err)
	require.Len(t, all, 5)

	for i := range 5 {
		_, err := s.Create(sim.ConfigMaps, "default", "new-"+strconv.Itoa(i), nil)
		require.NoError(t, err)
		_, err = s.Update(sim.ConfigMaps, "default", "cm-"+strconv.Itoa(i), map[string]string{"i": "changed"})
		require.NoError(t, err)
	}
	_, err = s.Delete(sim.ConfigMaps, "default", "cm-0")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(oursSeen.get()) == 16 && len(theirsSeen.get()) == 16 }, 10*time.Second, time.Millisecond,
		"ours %v\ntheirs %v", oursSeen.get(), theirsSeen.get())
	// The same writes, the same notifications. Only the order of the initial adds differs:
	// client-go's DeltaFIFO hands them out in map order; rewatch in the LIST's order.
	o, th := oursSeen.get(), theirsSeen.get()
	require.ElementsMatch(t, th[:5], o[:5])
	require.Equal(t, th[5:], o[5:])

	// A 429 as an event: the rule applies to the next watch, so the open one is dropped (a
	// re-watch), the re-watch gets the 429 and the informer watches once more. The wait is for
	// all of that, not only for the object, which the open watch could deliver on its own.
	event429 := p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.WatchError(faultproxy.TooManyRequests(1)).AfterDelay(10 * time.Millisecond)})
	_, watchesBefore := p.Counts()
	s.DropWatches()
	_, err = s.Create(sim.ConfigMaps, "default", "after-429", nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok, _ := inf.GetIndexer().GetByKey("default/after-429")
		_, watches := p.Counts()
		return ok && event429.Fired() == 1 && watches >= watchesBefore+2
	}, 10*time.Second, time.Millisecond)
	// The initial state streams as a watch-list (informer.WatchListFor), which the first 429
	// refused once; it is the one full state the informer took.
	full := 0
	for _, r := range p.Requests() {
		if r.Status == http.StatusOK && (r.Kind == faultproxy.List || r.Query.Get("sendInitialEvents") == "true") {
			full++
		}
	}
	require.Equal(t, 1, full, "429s at watch start and as an event cost no further full state")
}

// Metadata-only over the HTTP transport asks for PartialObjectMetadata and caches it.
func TestMetadataOnlyOverHTTP(t *testing.T) {
	_, simURL := startSim(t, 3)
	target, err := url.Parse(simURL)
	require.NoError(t, err)
	var mu sync.Mutex
	var accepts []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		accepts = append(accepts, r.Header.Get("Accept"))
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	inf, err := informer.NewHTTP(httpapi.Config{Client: &http.Client{}, Server: front.URL, MetadataOnly: true,
		Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"}}, quiet)
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	obj, ok, err := inf.GetIndexer().GetByKey("default/cm-1")
	require.NoError(t, err)
	require.True(t, ok)
	require.IsType(t, &metav1.PartialObjectMetadata{}, obj)
	require.Equal(t, "cm-1", obj.(*metav1.PartialObjectMetadata).Name)
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, accepts[0], "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
}

package factory_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/sim"
)

// recorder is a client-go InformerMetricsProvider that keeps what each metric was given, by the
// informer's name and resource.
type recorder struct {
	mu      sync.Mutex
	rv      map[string]float64
	latency map[string]int
	queued  map[string]bool
}

func newRecorder() *recorder {
	return &recorder{rv: map[string]float64{}, latency: map[string]int{}, queued: map[string]bool{}}
}

func idOf(id cache.InformerNameAndResource) string {
	return id.Name() + " " + id.GroupVersionResource().String()
}

type gauge struct {
	r   *recorder
	key string
}

func (g gauge) Set(v float64) {
	g.r.mu.Lock()
	defer g.r.mu.Unlock()
	g.r.rv[g.key] = v
}

type histogram struct {
	r   *recorder
	key string
}

func (h histogram) Observe(float64) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.latency[h.key]++
}

type nothing struct{}

func (nothing) Set(float64) {}

func (r *recorder) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued[idOf(id)] = true
	return nothing{}
}

func (r *recorder) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return histogram{r, idOf(id)}
}

func (r *recorder) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return gauge{r, idOf(id)}
}

func (r *recorder) get(key string) (rv float64, observed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rv[key], r.latency[key]
}

// A factory named with client-go's informers.WithInformerName reports client-go's informer
// metrics for each of its informers under that name and the informer's resource, as client-go's
// typed informers do: the store's resourceVersion, which follows the list and the watch, and
// the processing latency of each change.
func TestFactoryInformerNameLabelsClientGosInformerMetrics(t *testing.T) {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, name := range []string{"a", "b", "c"} {
		_, err := s.Create(sim.ConfigMaps, "default", name, nil)
		require.NoError(t, err)
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: u})
	require.NoError(t, err)
	name, err := cache.NewInformerName("rewatch-factory-test")
	require.NoError(t, err)
	rec := newRecorder()
	opts := quiet
	opts.InformerMetricsProvider = rec
	f := factory.New(cs, 0, opts, informers.WithInformerName(name))
	require.Same(t, name, f.InformerName())
	inf := f.Core().V1().ConfigMaps().Informer()
	stop := make(chan struct{})
	f.Start(stop)
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.WaitForCacheSync(stop)

	key := "rewatch-factory-test /v1, Resource=configmaps"
	listed, err := strconv.ParseFloat(inf.LastSyncResourceVersion(), 64)
	require.NoError(t, err)
	rv, observed := rec.get(key)
	require.Equal(t, listed, rv, "the store's resourceVersion is the list's")
	require.GreaterOrEqual(t, observed, 3, "one processing time per object of the list")
	require.Empty(t, rec.queued, "no FIFO, no queued-items gauge")

	createdRV, err := s.Create(sim.ConfigMaps, "default", "late", nil)
	require.NoError(t, err)
	written, err := strconv.ParseFloat(createdRV, 64)
	require.NoError(t, err)
	// The indexer moves its resourceVersion gauge as it stores the object; the change's
	// processing time is observed once the store call returns, a moment later.
	require.Eventually(t, func() bool { rv, after := rec.get(key); return rv == written && after > observed }, time.Minute, time.Millisecond,
		"the store's resourceVersion follows the watch, and the change's processing time is observed")
}

package informer_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/sim"
)

// rvGauges is a client-go InformerMetricsProvider that keeps the last store resourceVersion and
// the number of processing times of each informer, by name and resource.
type rvGauges struct {
	mu       sync.Mutex
	rv       map[string]float64
	observed map[string]int
}

type rvGauge struct {
	p   *rvGauges
	key string
}

func (g rvGauge) Set(v float64) {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.rv[g.key] = v
}

func (g rvGauge) Observe(float64) {
	g.p.mu.Lock()
	defer g.p.mu.Unlock()
	g.p.observed[g.key]++
}

func gaugeKey(id cache.InformerNameAndResource) string {
	return id.Name() + " " + id.GroupVersionResource().Resource
}

func (p *rvGauges) NewQueuedItemMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	panic("no FIFO, no queued-items gauge")
}

func (p *rvGauges) NewProcessingLatencyMetric(id cache.InformerNameAndResource) cache.HistogramMetric {
	return rvGauge{p, gaugeKey(id)}
}

func (p *rvGauges) NewStoreResourceVersionMetric(id cache.InformerNameAndResource) cache.GaugeMetric {
	return rvGauge{p, gaugeKey(id)}
}

func (p *rvGauges) get(key string) (float64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rv[key], p.observed[key]
}

// processProvider is the process-wide provider the test sets once; no other test of the
// package sets one.
var (
	processProvider    = &rvGauges{}
	setProcessProvider sync.Once
)

// NewSharedIndexInformerWithOptions takes client-go's options: an informer named with an
// InformerName reports client-go's informer metrics under it through the process-wide provider
// (cache.SetInformerMetricsProvider), as client-go's informer does; one without a name reports
// nothing.
func TestInformerNameReportsThroughTheProcessWideProvider(t *testing.T) {
	// client-go keeps the first provider set for the process: one for every run of the test
	// (-count), emptied for each.
	setProcessProvider.Do(func() { cache.SetInformerMetricsProvider(processProvider) })
	provider := processProvider
	provider.mu.Lock()
	provider.rv, provider.observed = map[string]float64{}, map[string]int{}
	provider.mu.Unlock()
	s, simURL := startSim(t, 2)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: simURL})
	require.NoError(t, err)
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "default", fields.Everything())
	name, err := cache.NewInformerName("rewatch-informer-test")
	require.NoError(t, err)
	t.Cleanup(name.Release)
	named := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{
		Identifier: name.WithResource(corev1.SchemeGroupVersion.WithResource("configmaps")),
	})
	unnamed := informer.NewSharedIndexInformerWithOptions(lw, &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{})
	for _, inf := range []cache.SharedIndexInformer{named, unnamed} {
		run(t, inf)
		informer.SyncedWithin(t, inf.HasSynced)
	}
	key := "rewatch-informer-test configmaps"
	createdRV, err := s.Create(sim.ConfigMaps, "default", "late", nil)
	require.NoError(t, err)
	written, err := strconv.ParseFloat(createdRV, 64)
	require.NoError(t, err)
	require.Eventually(t, func() bool { rv, _ := provider.get(key); return rv == written }, time.Minute, time.Millisecond,
		"the store's resourceVersion follows the watch")
	_, observed := provider.get(key)
	require.GreaterOrEqual(t, observed, 3, "a processing time for each object of the list and the watch")
	provider.mu.Lock()
	defer provider.mu.Unlock()
	require.Len(t, provider.rv, 1, "only the named informer reports")
}

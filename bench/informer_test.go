package bench

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Informer throughput: the same stream as the Throughput benchmarks, counted as events
// delivered to a handler of a SharedIndexInformer. Run with:
//
//	go test -run '^$' -bench InformerThroughput -benchmem -count 6 ./bench/
func benchInformer(b *testing.B, newInformer func(url string) cache.SharedIndexInformer) {
	n := streamEvents()
	stream := WatchStream(n, 1000)
	srv, _ := StreamServer(stream)
	defer srv.Close()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	var ms0, ms1 runtimeMemStats
	ms0.read()
	b.ResetTimer()
	for b.Loop() {
		inf := newInformer(srv.URL)
		var seen atomic.Int64
		done := make(chan struct{})
		tick := func() {
			if seen.Add(1) == int64(n) {
				close(done)
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { tick() }, UpdateFunc: func(_, _ any) { tick() }, DeleteFunc: func(any) { tick() },
		}); err != nil {
			b.Fatal(err)
		}
		runUntil(b, func(ctx context.Context) error { inf.RunWithContext(ctx); return nil }, done, 5*time.Minute, "stream not delivered within 5 minutes")
	}
	ms1.read()
	b.StopTimer()
	ops := float64(b.N)
	b.ReportMetric(float64(n)*ops/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(ms1.mallocs-ms0.mallocs)/(ops*float64(n)), "allocs/event")
}

// configMapListWatch is the ListerWatcher client-go's typed informer builds for configmaps.
func configMapListWatch(b *testing.B, url string) *cache.ListWatch {
	rc, err := rest.RESTClientFor(&rest.Config{Host: url, APIPath: "/api", QPS: -1, ContentConfig: rest.ContentConfig{
		GroupVersion: &corev1.SchemeGroupVersion, NegotiatedSerializer: scheme.Codecs.WithoutConversion(),
	}})
	if err != nil {
		b.Fatal(err)
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return rc.Get().Namespace("bench").Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Do(ctx).Get()
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.Watch = true
			return rc.Get().Namespace("bench").Resource("configmaps").VersionedParams(&o, scheme.ParameterCodec).Watch(ctx)
		},
	}
}

var indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}

func BenchmarkInformerThroughputClientGo(b *testing.B) {
	benchInformer(b, func(url string) cache.SharedIndexInformer {
		// The local server serves no watch-list, so client-go lists and watches, as the
		// Throughput benchmarks' client-go reflector does.
		lw := cache.ToListWatcherWithWatchListSemantics(configMapListWatch(b, url), listOnly{})
		return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, indexers)
	})
}

// The same ListerWatcher, rewatch's informer: the difference is the informer alone.
func BenchmarkInformerThroughputRewatchListWatch(b *testing.B) {
	quiet := informer.Options{Logger: slog.New(slog.DiscardHandler)}
	benchInformer(b, func(url string) cache.SharedIndexInformer {
		lw := cache.ToListWatcherWithWatchListSemantics(configMapListWatch(b, url), listOnly{})
		return informer.WithOptions(quiet)(lw, &corev1.ConfigMap{}, 0, indexers)
	})
}

// rewatch's informer over its own HTTP transport, typed.
func BenchmarkInformerThroughputRewatchHTTP(b *testing.B) {
	benchInformer(b, func(url string) cache.SharedIndexInformer {
		inf, err := informer.NewHTTP(httpapi.Config{Client: &http.Client{}, Server: url, Decoder: httpapi.Typed(scheme.Scheme),
			Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "bench"}},
			informer.Options{Logger: slog.New(slog.DiscardHandler), Indexers: indexers})
		if err != nil {
			b.Fatal(err)
		}
		return inf
	})
}

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/util/framer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	sigsjson "sigs.k8s.io/json"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
)

// Throughput benchmarks (bench/RESULTS.md, "Throughput"). One op is a whole stream of
// BENCH_EVENTS (default 100000) watch events of ~1 KiB from a local server; events/s and
// allocs/event are reported as custom metrics. They only run under -bench:
//
//	go test -run '^$' -bench Throughput -benchmem -count 6 ./bench/
func streamEvents() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 100000
}

func benchStream(b *testing.B, run func(ctx context.Context, url string, store *CountingStore) error, newInner func() InnerStore) {
	n := streamEvents()
	stream := WatchStream(n, 1000)
	srv, _ := StreamServer(stream)
	defer srv.Close()
	runStream(b, srv.URL, n, int64(len(stream)), run, newInner)
}

// runUntil runs one reflector until done is closed, then stops it; b fails if that takes
// longer than timeout (with msg) or if the reflector returns an error.
func runUntil(b *testing.B, run func(ctx context.Context) error, done <-chan struct{}, timeout time.Duration, msg string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- run(ctx) }()
	select {
	case <-done:
	case <-time.After(timeout):
		b.Fatal(msg)
	}
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// runRewatch runs rewatch with its defaults against the local server at url.
func runRewatch(ctx context.Context, url string, store rewatch.Store) error {
	r, err := rewatch.New(rewatch.Config{
		Connection: rewatch.Connection{Client: &http.Client{}, Server: url, Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "bench"}},
		Store:      store,
	})
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// runClientGoList runs client-go's Reflector in LIST+WATCH mode (the local servers serve no
// watch-list) with client-side rate limiting off.
func runClientGoList(ctx context.Context, url string, store cache.ReflectorStore) error {
	return RunClientGo(ctx, &rest.Config{Host: url, QPS: -1}, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "bench", store, true)
}

func BenchmarkThroughputRewatch(b *testing.B) {
	benchStream(b, func(ctx context.Context, url string, store *CountingStore) error { return runRewatch(ctx, url, store) },
		func() InnerStore { return driver.NewMemStore() })
}

func BenchmarkThroughputClientGo(b *testing.B) {
	benchStream(b, func(ctx context.Context, url string, store *CountingStore) error {
		return runClientGoList(ctx, url, store)
	},
		func() InnerStore { return cache.NewStore(cache.MetaNamespaceKeyFunc) })
}

// BenchmarkThroughputDecodeOnly is the practical limit: apimachinery's JSON framer and
// streaming decoder, the frame into metav1.WatchEvent, the object into Unstructured; no store.
func BenchmarkThroughputDecodeOnly(b *testing.B) {
	benchStream(b, func(ctx context.Context, url string, store *CountingStore) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/namespaces/bench/configmaps?watch=1", nil)
		return decodeWatchEvents(req, func(body io.ReadCloser) streaming.Decoder {
			return streaming.NewDecoder(framer.NewJSONFramedReader(body), weDecoder{})
		}, func(raw []byte) error {
			return (&unstructured.Unstructured{}).UnmarshalJSON(raw)
		}, store)
	}, func() InnerStore { return nil })
}

type weDecoder struct{}

func (weDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	we, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("want *metav1.WatchEvent, got %T", into)
	}
	return we, nil, sigsjson.UnmarshalCaseSensitivePreserveInts(data, we)
}

// TestWatchStreamShape keeps the generator honest and runs by default (fast).
func TestWatchStreamShape(t *testing.T) {
	s := WatchStream(10, 4)
	if n := len(s) / 10; n < 1000 || n > 1200 {
		t.Fatalf("event size %d bytes, want ~1 KiB", n)
	}
}

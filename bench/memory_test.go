package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Memory per cached object: an informer syncs memoryObjects configmaps (BENCH_OBJECTS
// overrides) that carry managedFields as kubectl and a controller leave them, with one handler
// that has seen every add; the live heap after a GC, less the live heap before the informer
// started, divided by the objects, is B/object. Run with:
//
//	go test -run '^$' -bench InformerMemory -benchtime 1x -count 3 ./bench/
const memoryObjects = 50000

func memoryObjectCount() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_OBJECTS")); err == nil && n > 0 {
		return n
	}
	return memoryObjects
}

// managedListBody is a LIST of n configmaps of ~1.3 KiB, 0.45 KiB of it managedFields; with
// metadataOnly the same objects as a PartialObjectMetadataList, as the server answers a
// metadata client.
func managedListBody(n int, metadataOnly bool) []byte {
	var b bytes.Buffer
	kind, apiVersion := "ConfigMapList", "v1"
	if metadataOnly {
		kind, apiVersion = "PartialObjectMetadataList", "meta.k8s.io/v1"
	}
	fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"},"items":[`, kind, apiVersion, n+1)
	pad := strings.Repeat("y", 700)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if metadataOnly {
			b.WriteString(`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",`)
		} else {
			b.WriteByte('{')
		}
		fmt.Fprintf(&b, `"metadata":{"name":"cm-%05d","namespace":"bench","uid":"00000000-0000-0000-0000-%012d","resourceVersion":"%d",`+
			`"creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench","tier":"backend"},"managedFields":[`+
			`{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z","fieldsType":"FieldsV1",`+
			`"fieldsV1":{"f:data":{".":{},"f:payload":{}},"f:metadata":{"f:labels":{".":{},"f:app":{},"f:tier":{}}}}},`+
			`{"manager":"bench-controller","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:01Z","fieldsType":"FieldsV1",`+
			`"fieldsV1":{"f:data":{"f:status":{}}}}]}`, i, i, i+1)
		if !metadataOnly {
			fmt.Fprintf(&b, `,"data":{"payload":%q,"status":"ok"}`, pad)
		}
		b.WriteByte('}')
	}
	b.WriteString("]}")
	return b.Bytes()
}

// listServer answers every LIST with the whole list in one page (a metadata Accept header gets
// the metadata list) and holds every watch open without events.
func listServer(n int) *httptest.Server {
	full, meta := managedListBody(n, false), managedListBody(n, true)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serveWatch(w, r, "application/json", nil) {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		body := full
		if strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadataList") {
			body = meta
		}
		_, _ = w.Write(body)
	}))
}

func liveHeap() uint64 {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func benchMemory(b *testing.B, newInformer func(url string) cache.SharedIndexInformer) {
	n := memoryObjectCount()
	srv := listServer(n)
	defer srv.Close()
	var perObject float64
	for b.Loop() {
		before := liveHeap()
		inf := newInformer(srv.URL)
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan struct{})
		go func() { inf.RunWithContext(ctx); close(stopped) }()
		syncCtx, syncCancel := context.WithTimeout(ctx, 5*time.Minute)
		if !cache.WaitForCacheSync(syncCtx.Done(), reg.HasSynced) {
			b.Fatal("no sync within 5 minutes")
		}
		syncCancel()
		if got := len(inf.GetStore().ListKeys()); got != n {
			b.Fatalf("%d objects cached, want %d", got, n)
		}
		after := liveHeap()
		perObject += (float64(after) - float64(before)) / float64(n)
		goruntime.KeepAlive(inf)
		cancel()
		<-stopped
	}
	b.ReportMetric(perObject/float64(b.N), "B/object")
}

func metadataListWatch(b *testing.B, url string) cache.ListerWatcher {
	client, err := metadata.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	r := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("bench")
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return r.Watch(ctx, o)
		},
	}
	// What metadatainformer builds, in LIST+WATCH mode as every variant here.
	return cache.ToListWatcherWithWatchListSemantics(lw, listOnly{})
}

func quietOptions() informer.Options {
	return informer.Options{Logger: slog.New(slog.DiscardHandler), Indexers: indexers}
}

func BenchmarkInformerMemory(b *testing.B) {
	configMaps := httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "bench"}
	clientGo := func(url string) cache.SharedIndexInformer {
		lw := cache.ToListWatcherWithWatchListSemantics(configMapListWatch(b, url), listOnly{})
		return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, indexers)
	}
	overHTTP := func(conn httpapi.Config, opts informer.Options) func(string) cache.SharedIndexInformer {
		return func(url string) cache.SharedIndexInformer {
			conn.Client, conn.Server, conn.Resource = &http.Client{}, url, configMaps
			inf, err := informer.NewHTTP(conn, opts)
			if err != nil {
				b.Fatal(err)
			}
			return inf
		}
	}
	stripped := quietOptions()
	stripped.Transform = informer.StripManagedFields
	cases := []struct {
		name string
		new  func(url string) cache.SharedIndexInformer
	}{
		{"client-go", clientGo},
		{"client-go-strip", func(url string) cache.SharedIndexInformer {
			inf := clientGo(url)
			if err := inf.SetTransform(informer.StripManagedFields); err != nil {
				b.Fatal(err)
			}
			return inf
		}},
		{"client-go-metadata", func(url string) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(metadataListWatch(b, url), &metav1.PartialObjectMetadata{}, 0, indexers)
		}},
		{"rewatch-listwatch", func(url string) cache.SharedIndexInformer {
			// The local server serves no watch-list: both informers list and watch.
			lw := cache.ToListWatcherWithWatchListSemantics(configMapListWatch(b, url), listOnly{})
			return informer.WithOptions(quietOptions())(lw, &corev1.ConfigMap{}, 0, nil)
		}},
		{"rewatch-http", overHTTP(httpapi.Config{Decoder: httpapi.Typed(scheme.Scheme)}, quietOptions())},
		{"rewatch-http-strip", overHTTP(httpapi.Config{Decoder: httpapi.Typed(scheme.Scheme)}, stripped)},
		{"rewatch-http-metadata", overHTTP(httpapi.Config{MetadataOnly: true}, quietOptions())},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchMemory(b, c.new) })
	}
}

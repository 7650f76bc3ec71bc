package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// Initial sync of BENCH_SYNC_PODS (default 50000) ~6 KiB Pods in one LIST page, in JSON and in
// protobuf, by rewatch and by client-go's Reflector over a typed REST client for that format.
// One op is the whole sync into the store; besides time and B/op it reports the peak heap
// during the op above the live heap before it ("peak-MiB": live and unswept objects;
// "peak-live-MiB": what a GC marked live) and the LIST body's size ("wire-MiB").
// Run with:
//
//	go test -run '^$' -bench PodSync -benchmem -benchtime 1x -count 6 ./bench/ | benchstat -col /runner -
func BenchmarkPodSync(b *testing.B) {
	n := 50000
	if v, err := strconv.Atoi(os.Getenv("BENCH_SYNC_PODS")); err == nil && v > 0 {
		n = v
	}
	for _, media := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		name := map[string]string{runtime.ContentTypeJSON: "json", runtime.ContentTypeProtobuf: "protobuf"}[media]
		for _, runner := range []string{"client-go", "rewatch-typed"} {
			b.Run(fmt.Sprintf("wire=%s/runner=%s", name, runner), func(b *testing.B) { benchPodSync(b, n, media, runner) })
		}
	}
}

// podList is a PodList of n pods at resourceVersion n+1, encoded once per process.
func podList(c wireCodec, n int) []byte {
	return cached(fmt.Sprintf("list %s %d", c.media, n), func() []byte {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(n + 1)}, Items: make([]corev1.Pod, n)}
		for i := range n {
			l.Items[i] = *benchPod(i, i+1)
		}
		return c.encode(l)
	})
}

func benchPodSync(b *testing.B, n int, media, runner string) {
	c := codecFor(media)
	body := podList(c, n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Accept"), media) {
			http.Error(w, "this server answers "+media+" only", http.StatusNotAcceptable)
			return
		}
		if serveWatch(w, r, media+";stream=watch", nil) {
			return
		}
		w.Header().Set("Content-Type", media)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	format := map[string]rewatch.Format{runtime.ContentTypeJSON: rewatch.FormatJSON, runtime.ContentTypeProtobuf: rewatch.FormatProtobuf}[media]
	run := func(ctx context.Context, store *replaceStore) error {
		if runner == "client-go" {
			return runClientGoTyped(ctx, srv.URL, media, "pods", &corev1.Pod{}, store)
		}
		r, err := rewatch.New(rewatch.Config{Store: store, Connection: rewatch.Connection{
			Client: &http.Client{}, Server: srv.URL, Format: format, Decoder: httpapi.Typed(scheme.Scheme),
			Resource: rewatch.Resource{Version: "v1", Resource: "pods", Namespace: "bench"}}})
		if err != nil {
			return err
		}
		return r.Run(ctx)
	}
	newInner := func() InnerStore { return driver.NewMemStore() }
	if runner == "client-go" {
		newInner = func() InnerStore { return cache.NewStore(cache.MetaNamespaceKeyFunc) }
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	var peak, peakLive float64
	for b.Loop() {
		b.StopTimer()
		base := liveHeap()
		sampler := sampleHeap(time.Millisecond)
		b.StartTimer()
		store := &replaceStore{InnerStore: newInner(), done: make(chan struct{})}
		runUntil(b, func(ctx context.Context) error { return run(ctx, store) }, store.done, 5*time.Minute, "no sync within 5 minutes")
		b.StopTimer()
		objects, live := sampler()
		peak += float64(objects-base) / (1 << 20)
		peakLive += float64(live-base) / (1 << 20)
		b.StartTimer()
	}
	b.ReportMetric(peak/float64(b.N), "peak-MiB")
	b.ReportMetric(peakLive/float64(b.N), "peak-live-MiB")
	b.ReportMetric(float64(len(body))/(1<<20), "wire-MiB")
}

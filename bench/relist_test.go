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
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// A forced relist of a full cache (docs/semantics.md, "Relists"): a reflector or informer syncs
// BENCH_RELIST_CONFIGMAPS (default 50,000) ~1 KiB ConfigMaps or BENCH_RELIST_PODS (default
// 20,000) ~6 KiB Pods in JSON or protobuf, then its watch gets a 410 and it lists everything
// again — the same objects at the same resourceVersions, only the list's own resourceVersion
// moves. One op is one relist. Reported, all above the live heap before the runner started
// (the server's encoded bodies live in the same process):
//
//	steady-MiB      live heap of the synced cache (after two GCs)
//	peak-live-MiB   the largest live heap during the relist: a GC is forced every 10 ms and
//	                each one's marked-live heap read, so the figure does not depend on when the
//	                collector happened to run
//	peak/steady     their ratio (target ≤ 1.15)
//	peak-rss-MiB    the largest RSS during the relist (VmHWM, reset before it) above the RSS
//	                before the runner started; with BENCH_RELIST_GC=natural the forced GCs are
//	                off, so RSS is what the collector's own pacing gives
//	noop-updates    updates whose resourceVersion did not change handed to a handler with no
//	                resync period (the reflector has no handler: 0 by construction)
//
// With BENCH_RELIST_PEAKPROF=FILE, a heap profile is written to FILE.steady when the cache is
// synced and to FILE each time a new peak is read (the profile of the GC that marked it), for
// `go tool pprof -base FILE.steady FILE`.
//
// Run with:
//
//	go test -run '^$' -bench Relist -benchtime 1x -count 3 ./bench/ | benchstat -col /runner -
func BenchmarkRelist(b *testing.B) {
	for _, object := range []string{"configmap", "pod"} {
		for _, media := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
			wire := map[string]string{runtime.ContentTypeJSON: "json", runtime.ContentTypeProtobuf: "protobuf"}[media]
			var data *relistData
			for _, runner := range relistRunners {
				b.Run(fmt.Sprintf("object=%s/wire=%s/runner=%s", object, wire, runner.name), func(b *testing.B) {
					if data == nil {
						data = newRelistData(object, media)
					}
					benchRelist(b, data, runner)
				})
			}
			data = nil
		}
	}
}

func relistObjects(object string) int {
	env, n := "BENCH_RELIST_CONFIGMAPS", 50000
	if object == "pod" {
		env, n = "BENCH_RELIST_PODS", 20000
	}
	if v, err := strconv.Atoi(os.Getenv(env)); err == nil && v > 0 {
		n = v
	}
	return n
}

// The list's resourceVersion before and after the relist; no object's resourceVersion, uid or
// name contains either, so the second body is the first with one value replaced.
const relistRV0, relistRV1 = "900000001", "900000002"

// relistData is what the server answers, encoded once: the list at each resourceVersion, and for
// watch-list the initial events (an ADDED frame per object) with the bookmark that ends them
// at each, and the 410 ERROR frame that forces the relist.
type relistData struct {
	object, media string
	n             int
	list          [2][]byte
	events        []byte
	bookmark      [2][]byte
	expired       []byte
}

func newRelistData(object, media string) *relistData {
	c := codecFor(media)
	n := relistObjects(object)
	d := &relistData{object: object, media: media, n: n}
	var list runtime.Object
	var objs []runtime.Object
	if object == "pod" {
		l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: relistRV0}, Items: make([]corev1.Pod, n)}
		for i := range n {
			l.Items[i] = *benchPod(i, i+1)
			objs = append(objs, &l.Items[i])
		}
		list = l
	} else {
		l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: relistRV0}, Items: make([]corev1.ConfigMap, n)}
		for i := range n {
			l.Items[i] = *benchConfigMap(i, i+1)
			objs = append(objs, &l.Items[i])
		}
		list = l
	}
	d.list[0] = c.encode(list)
	if bytes.Count(d.list[0], []byte(relistRV0)) != 1 {
		panic("the list's resourceVersion is not unique in its body")
	}
	d.list[1] = bytes.Replace(d.list[0], []byte(relistRV0), []byte(relistRV1), 1)
	frames := func(events ...metav1.WatchEvent) []byte {
		var buf bytes.Buffer
		enc := streaming.NewEncoder(c.info.StreamSerializer.Framer.NewFrameWriter(&buf), c.info.StreamSerializer.Serializer)
		for i := range events {
			if err := enc.Encode(&events[i]); err != nil {
				panic(err)
			}
		}
		return buf.Bytes()
	}
	var buf bytes.Buffer
	for _, o := range objs {
		buf.Write(frames(metav1.WatchEvent{Type: string(watch.Added), Object: runtime.RawExtension{Raw: c.encode(o)}}))
	}
	d.events = buf.Bytes()
	for i, rv := range []string{relistRV0, relistRV1} {
		bm := metav1.ObjectMeta{ResourceVersion: rv, Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}
		var o runtime.Object = &corev1.ConfigMap{ObjectMeta: bm}
		if object == "pod" {
			o = &corev1.Pod{ObjectMeta: bm}
		}
		d.bookmark[i] = frames(metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Raw: c.encode(o)}})
	}
	st := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	d.expired = frames(metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: c.encode(st)}})
	return d
}

func (d *relistData) resource() string {
	if d.object == "pod" {
		return "pods"
	}
	return "configmaps"
}

func (d *relistData) example() runtime.Object {
	if d.object == "pod" {
		return &corev1.Pod{}
	}
	return &corev1.ConfigMap{}
}

// relistServer serves d: the first LIST or watch-list stream at relistRV0, every later one at
// relistRV1; a watch opened at relistRV0 gets the 410 when the relist is triggered, and any other
// watch is held open, quiet, until the client goes.
type relistServer struct {
	*httptest.Server
	d                     *relistData
	trigger               chan struct{}
	lists, streams, watch atomic.Int32
}

func newRelistServer(d *relistData) *relistServer {
	s := &relistServer{d: d, trigger: make(chan struct{})}
	s.Server = httptest.NewServer(s)
	return s
}

func (s *relistServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("watch") != "1" && q.Get("watch") != "true" {
		gen := min(int(s.lists.Add(1))-1, 1)
		w.Header().Set("Content-Type", s.d.media)
		_, _ = w.Write(s.d.list[gen])
		return
	}
	ct := s.d.media
	if ct == runtime.ContentTypeProtobuf {
		ct += ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	gen := 1
	if q.Get("sendInitialEvents") == "true" {
		gen = min(int(s.streams.Add(1))-1, 1)
		_, _ = w.Write(s.d.events)
		_, _ = w.Write(s.d.bookmark[gen])
	} else {
		s.watch.Add(1)
		if q.Get("resourceVersion") == relistRV0 {
			gen = 0
		}
	}
	_ = rc.Flush()
	if gen == 0 {
		select {
		case <-s.trigger:
			_, _ = w.Write(s.d.expired)
			_ = rc.Flush()
			return
		case <-r.Context().Done():
			return
		}
	}
	<-r.Context().Done()
}

// counting is a handler without a resync period that counts what it is given.
type counting struct {
	adds, updates, noop atomic.Int64
}

func (c *counting) OnAdd(any, bool) { c.adds.Add(1) }
func (c *counting) OnUpdate(old, obj any) {
	c.updates.Add(1)
	o, err1 := meta.Accessor(old)
	n, err2 := meta.Accessor(obj)
	if err1 == nil && err2 == nil && o.GetResourceVersion() == n.GetResourceVersion() {
		c.noop.Add(1)
	}
}
func (c *counting) OnDelete(any) {}

// running is one runner under way.
type running struct {
	lastRV  func() string
	handler *counting // nil for the reflector, which has no handlers
	stop    func()
}

type relistRunner struct {
	name  string
	start func(b *testing.B, url string, d *relistData) *running
}

var relistRunners = []relistRunner{
	{"rewatch-reflector", startRewatchReflector(false)},
	{"rewatch-informer", startRewatchInformer(false)},
	{"rewatch-informer-watchlist", startRewatchInformer(true)},
	{"rewatch-factory", startRewatchFactory},
	{"client-go-list", startClientGoInformer(false)},
	{"client-go-watchlist", startClientGoInformer(true)},
}

func wireFormat(media string) httpapi.Format {
	if media == runtime.ContentTypeProtobuf {
		return httpapi.FormatProtobuf
	}
	return httpapi.FormatJSON
}

func startRewatchReflector(watchList bool) func(*testing.B, string, *relistData) *running {
	return func(b *testing.B, url string, d *relistData) *running {
		r, err := rewatch.New(rewatch.Config{
			Connection: rewatch.Connection{Client: &http.Client{}, Server: url, Format: wireFormat(d.media), Decoder: httpapi.Typed(scheme.Scheme),
				Resource: rewatch.Resource{Version: "v1", Resource: d.resource(), Namespace: "bench"}},
			Policy: rewatch.Policy{WatchList: watchList},
			Store:  driver.NewMemStore(), Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = r.Run(ctx) }()
		return &running{lastRV: func() string { return r.Stats().LastResourceVersion }, stop: func() { cancel(); <-done }}
	}
}

func startRewatchInformer(watchList bool) func(*testing.B, string, *relistData) *running {
	return func(b *testing.B, url string, d *relistData) *running {
		opts := informer.Options{Logger: slog.New(slog.DiscardHandler), Indexers: indexers}
		opts.Policy.WatchList = watchList
		inf, err := informer.NewHTTP(httpapi.Config{Client: &http.Client{}, Server: url, Format: wireFormat(d.media), Decoder: httpapi.Typed(scheme.Scheme),
			Resource: httpapi.Resource{Version: "v1", Resource: d.resource(), Namespace: "bench"}}, opts)
		if err != nil {
			b.Fatal(err)
		}
		return runInformer(b, inf)
	}
}

// startRewatchFactory is a program on package informer/factory: the typed informer of a
// SharedInformerFactory made from a clientset, as a controller gets it.
func startRewatchFactory(b *testing.B, url string, d *relistData) *running {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		b.Fatal(err)
	}
	f := factory.New(cs, 0, informer.Options{Logger: slog.New(slog.DiscardHandler), Format: wireFormat(d.media)}, informers.WithNamespace("bench"))
	// One informer only: the server serves d whatever the path, and counts every LIST.
	var inf cache.SharedIndexInformer
	if d.object == "pod" {
		inf = f.Core().V1().Pods().Informer()
	} else {
		inf = f.Core().V1().ConfigMaps().Informer()
	}
	h := &counting{}
	if _, err := inf.AddEventHandler(h); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.StartWithContext(ctx)
	return &running{lastRV: inf.LastSyncResourceVersion, handler: h, stop: func() { cancel(); f.Shutdown() }}
}

func startClientGoInformer(watchList bool) func(*testing.B, string, *relistData) *running {
	return func(b *testing.B, url string, d *relistData) *running {
		plain, err := typedListWatch(url, d.media, d.resource())
		if err != nil {
			b.Fatal(err)
		}
		var lw cache.ListerWatcher = plain
		if !watchList {
			lw = cache.ToListWatcherWithWatchListSemantics(plain, listOnly{})
		}
		return runInformer(b, cache.NewSharedIndexInformer(lw, d.example(), 0, indexers))
	}
}

func runInformer(b *testing.B, inf cache.SharedIndexInformer) *running {
	h := &counting{}
	if _, err := inf.AddEventHandler(h); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	return &running{lastRV: inf.LastSyncResourceVersion, handler: h, stop: func() { cancel(); <-done }}
}

func benchRelist(b *testing.B, d *relistData, runner relistRunner) {
	forceGC := os.Getenv("BENCH_RELIST_GC") != "natural"
	var steady, peak, ratio, rss, noop float64
	for b.Loop() {
		b.StopTimer()
		srv := newRelistServer(d)
		base := liveHeap()
		debug.FreeOSMemory()
		baseRSS := rssKiB("VmRSS:")
		r := runner.start(b, srv.URL, d)
		waitFor(b, func() bool {
			return r.lastRV() == relistRV0 && (r.handler == nil || r.handler.adds.Load() == int64(d.n))
		}, "initial sync")
		if full := srv.streams.Load() + srv.lists.Load(); full != 1 {
			b.Fatalf("%d full-state requests for the initial sync", full)
		}
		steadyLive := liveHeap()
		writeRelistProfile(".steady")
		resetPeakRSS(b)
		sample := sampleLiveHeap(forceGC)
		b.StartTimer()
		close(srv.trigger)
		waitFor(b, func() bool { return r.lastRV() == relistRV1 }, "relist")
		b.StopTimer()
		peakLive := sample()
		peakRSS := peakRSSKiB()
		if r.handler != nil {
			settle(r.handler)
			noop += float64(r.handler.noop.Load())
		}
		if srv.streams.Load()+srv.lists.Load() != 2 {
			b.Fatalf("%d full-state requests, want 2 (the sync and the relist)", srv.streams.Load()+srv.lists.Load())
		}
		if strings.Contains(runner.name, "watchlist") != (srv.streams.Load() == 2) {
			b.Fatalf("%s made %d watch-list streams and %d LISTs", runner.name, srv.streams.Load(), srv.lists.Load())
		}
		s, p := float64(steadyLive-base), float64(peakLive-base)
		steady += s / (1 << 20)
		peak += p / (1 << 20)
		ratio += p / s
		rss += float64(peakRSS-baseRSS) / 1024
		r.stop()
		srv.Close()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(steady/n, "steady-MiB")
	b.ReportMetric(peak/n, "peak-live-MiB")
	b.ReportMetric(ratio/n, "peak/steady")
	b.ReportMetric(rss/n, "peak-rss-MiB")
	b.ReportMetric(noop/n, "noop-updates")
}

func waitFor(b *testing.B, cond func() bool, what string) {
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("no %s within 5 minutes", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// settle waits until the handler has been quiet for 200 ms: notifications are delivered after
// the store has the state.
func settle(h *counting) {
	last := h.updates.Load()
	for quiet := 0; quiet < 20; {
		time.Sleep(10 * time.Millisecond)
		if now := h.updates.Load(); now != last {
			last, quiet = now, 0
			continue
		}
		quiet++
	}
}

// writeRelistProfile writes the heap profile as of the last GC to BENCH_RELIST_PEAKPROF plus
// suffix, when that is set.
func writeRelistProfile(suffix string) {
	name := os.Getenv("BENCH_RELIST_PEAKPROF")
	if name == "" {
		return
	}
	f, err := os.Create(name + suffix)
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.WriteHeapProfile(f)
}

// sampleLiveHeap records the largest heap a GC marked live until the returned function is
// called; with force it runs a GC every 10 ms, so that no peak passes between two of them.
func sampleLiveHeap(force bool) func() uint64 {
	var maxLive atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	read := func() {
		metrics.Read(sample)
		if v := sample[0].Value.Uint64(); v > maxLive.Load() {
			maxLive.Store(v)
			writeRelistProfile("")
		}
	}
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			if force {
				goruntime.GC()
			}
			read()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() uint64 {
		once.Do(func() { close(stop); <-done })
		goruntime.GC() // the end of the relist itself
		read()
		return maxLive.Load()
	}
}

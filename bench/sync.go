package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
)

const syncNS = "bench"

// SyncResult is one initial-sync measurement (one child process).
type SyncResult struct {
	Server    string // "real" or "sim"
	Variant   string
	WatchList bool
	Objects   int
	// Seconds from starting the reflector until the store holds every object.
	SyncSeconds float64
	// PeakHeapBytes is the highest live+unswept heap (runtime/metrics heap objects) sampled
	// every 5 ms during the sync; RetainedHeapBytes is the heap after sync and a GC.
	PeakHeapBytes, RetainedHeapBytes uint64
	// PeakLiveBytes is the largest heap a GC cycle marked live during the sync
	// (/gc/heap/live:bytes): less dependent on when the GC happened to run than PeakHeapBytes.
	PeakLiveBytes uint64
	MaxRSSKiB     int64
	CPUSeconds    float64
	// Requests is what the reflector asked for (LIST pages and bytes, watch-list streams).
	Requests MeterCounts
	Err      string
}

// SyncOptions configures RunSync.
type SyncOptions struct {
	Sizes   []int
	Repeats int
	// Server is "real" (kube-apiserver + etcd from .cache/bin, reached through the fault
	// proxy with no faults armed) or "sim" (the in-process simulator, MaxPageSize 500).
	Server string
	Self   string
	Logf   func(string, ...any)
}

// SyncCase is a reflector and list mode.
type SyncCase struct {
	Variant   string
	WatchList bool
}

// SyncCases are the initial-sync comparisons: paginated LIST and WatchList, each reflector.
var SyncCases = []SyncCase{{VariantRewatch, false}, {VariantCGList, false}, {VariantRewatch, true}, {VariantClientGo, true}}

// RunSync fills a server with n ~1 KiB configmaps per size (ascending; the objects of a
// smaller size are kept and topped up), then measures each case in its own process, Repeats
// times, rotating the order.
func RunSync(ctx context.Context, o SyncOptions) ([]SyncResult, error) {
	sizes := slices.Sorted(slices.Values(o.Sizes))
	var fill func(from, to int) error
	var url string
	switch o.Server {
	case "real":
		s, cs, err := startServer(ctx, syncNS, apiserver.Options{})
		if err != nil {
			return nil, err
		}
		defer s.Stop()
		upstream, err := rest.TransportFor(s.RESTConfig())
		if err != nil {
			return nil, err
		}
		p, err := faultproxy.New(faultproxy.Config{Upstream: s.URL(), Transport: upstream, ForceJSON: true})
		if err != nil {
			return nil, err
		}
		defer p.Close()
		url = p.URL()
		fill = func(from, to int) error { return populate(ctx, cs, syncNS, from, to) }
	case "sim":
		s := sim.New(sim.Options{MaxPageSize: 500})
		var err error
		if url, err = s.Start(); err != nil {
			return nil, err
		}
		defer s.Close()
		fill = func(from, to int) error {
			for i := from; i < to; i++ {
				if _, err := s.Create(sim.ConfigMaps, syncNS, fmt.Sprintf("cm-%05d", i), map[string]string{"payload": payload}); err != nil {
					return err
				}
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("unknown server %q (real or sim)", o.Server)
	}
	var out []SyncResult
	have := 0
	for _, n := range sizes {
		t0 := time.Now()
		if err := fill(have, n); err != nil {
			return nil, err
		}
		o.Logf("%s server: %d configmaps (created %d in %s)", o.Server, n, n-have, time.Since(t0).Round(time.Millisecond))
		have = n
		for rep := range o.Repeats {
			for k := range SyncCases {
				c := SyncCases[(k+rep)%len(SyncCases)]
				r, err := syncOnce(ctx, o.Self, url, c, n)
				if err != nil {
					return nil, err
				}
				r.Server = o.Server
				o.Logf("sync n=%d %s watchList=%v: %.2fs peak heap %.0f MiB", n, c.Variant, c.WatchList, r.SyncSeconds, float64(r.PeakHeapBytes)/(1<<20))
				out = append(out, r)
			}
		}
	}
	return out, nil
}

func syncOnce(ctx context.Context, self, url string, c SyncCase, n int) (SyncResult, error) {
	cmd := exec.CommandContext(ctx, self, "sync-child", "-variant", c.Variant, "-server", url, "-n", fmt.Sprint(n),
		fmt.Sprintf("-watchlist=%v", c.WatchList))
	cmd.Env = os.Environ()
	if c.Variant == VariantCGList {
		cmd.Env = append(cmd.Env, "KUBE_FEATURE_WatchListClient=false")
	}
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return SyncResult{}, fmt.Errorf("sync-child %v: %w", c, err)
	}
	var r SyncResult
	for _, l := range strings.Split(string(b), "\n") {
		if j, ok := strings.CutPrefix(l, "RESULT "); ok {
			return r, json.Unmarshal([]byte(j), &r)
		}
	}
	return r, fmt.Errorf("sync-child %v: no result", c)
}

// SyncChild runs one reflector until its store holds n objects and reports.
func SyncChild(variant, server string, n int, watchList bool, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := NewStoreFor(variant)
	sampler := sampleHeap(5 * time.Millisecond)
	meter := &Meter{Base: http.DefaultTransport.(*http.Transport).Clone()}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- RunReflector(ctx, variant, Target{Server: server, GVR: sim.ConfigMaps, Namespace: syncNS, WatchList: watchList, Transport: meter}, store)
	}()
	res := SyncResult{Variant: variant, WatchList: watchList, Objects: n}
	deadline := time.Now().Add(5 * time.Minute)
	for store.Len() < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	res.SyncSeconds = time.Since(start).Seconds()
	res.PeakHeapBytes, res.PeakLiveBytes = sampler()
	if store.Len() < n {
		res.Err = fmt.Sprintf("only %d of %d objects after 5 minutes", store.Len(), n)
	}
	runtime.GC()
	retained := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(retained)
	res.RetainedHeapBytes = retained[0].Value.Uint64()
	res.CPUSeconds = processCPU().Seconds()
	res.MaxRSSKiB = peakRSSKiB()
	res.Requests = meter.Counts()
	res.Requests.Opens, res.Requests.Fails, res.Requests.Requests = nil, nil, nil
	runtime.KeepAlive(store)
	cancel()
	<-done
	b, _ := json.Marshal(res)
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "RESULT %s\n", b)
	return w.Flush()
}

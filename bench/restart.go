package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/persist"
)

// Restart scenarios: what happened to the server while the controller was down.
const (
	// RestartDown: the controller is down for a while as a writer changes a few objects; the
	// server still holds the history since the controller stopped.
	RestartDown = "down"
	// RestartExpired: as RestartDown, and kube-apiserver is restarted (etcd kept) during the
	// down time, so that its watch cache begins after the stopped controller's last
	// resourceVersion: a watch from there is answered 410, as after a compaction.
	RestartExpired = "expired"
)

// RestartScenarios lists every restart scenario.
var RestartScenarios = []string{RestartDown, RestartExpired}

// RestartVariants are the controllers a restart is measured with: rewatch's SharedInformerFactory
// (informer/factory) with its cache persisted in a directory, and client-go's, with its
// defaults (a watch-list) and with LISTs. VariantRewatchBucket (rewatch with its cache in a
// bucket, each start a new pod with no local cache) is run with -variants.
var RestartVariants = []string{VariantRewatch, VariantClientGo, VariantCGList}

const restartNS = "restart"

// RestartOptions configures RunRestart.
type RestartOptions struct {
	Objects int           // ~1 KiB configmaps on the server
	Down    time.Duration // how long the controller is down
	// Changed is how many objects the writer changes while the controller is down (one of
	// them deleted and one created, the rest updated), spread over Down.
	Changed   int
	Scenarios []string
	Variants  []string
	// CacheDir holds the rewatch controller's snapshots, a directory per run.
	CacheDir string
	// OnResult, when set, hears of each run as it ends.
	OnResult func(RestartResult)
	Self     string
	Logf     func(string, ...any)
}

// RestartResult is one controller restarted once.
type RestartResult struct {
	Scenario, Variant string
	Objects, Changed  int
	DownSeconds       float64
	// First is the controller's first start (an empty cache), Restart its start after the down
	// time: what it asked of the server, how long until HasSynced, its heap.
	First, Restart RestartChildResult
	// ServerRequests is the server's apiserver_request_total for configmaps over the restart
	// ("VERB CODE" → requests): LISTs (the consistent limit=1 read of a resume among them) and
	// WATCHes (a watch-list among them).
	ServerRequests map[string]int
	Err            string
}

// RestartChildResult is what one start of the controller did until HasSynced.
type RestartChildResult struct {
	// SyncSeconds is the time from starting the informer until HasSynced.
	SyncSeconds float64
	// PeakHeapBytes and PeakLiveBytes as in SyncResult, from the start until HasSynced;
	// RetainedHeapBytes after HasSynced and a GC.
	PeakHeapBytes, PeakLiveBytes, RetainedHeapBytes uint64
	// Requests is what the informer asked for until HasSynced.
	Requests MeterCounts
	// FullStateTransfers is the LISTs (first pages, a limit=1 read left out) and watch-lists.
	FullStateTransfers int
	// Objects is what the cache held at HasSynced; EqualAtSync whether it was the server's
	// state then (the writer had stopped before the start); EqualSeconds how long after the
	// start it first was (-1: not within a minute).
	Objects      int
	EqualAtSync  bool
	EqualSeconds float64
	// Start is how the start went, as rewatch's Stats.Start says it (zero for client-go).
	Start rewatch.Start `json:",omitzero"`
	// ObjectStore is what the start asked of the bucket until HasSynced (VariantRewatchBucket).
	ObjectStore ObjectStoreCounts `json:",omitzero"`
	Err         string            `json:",omitempty"`
}

// RunRestart fills a fresh kube-apiserver with Objects configmaps and restarts a controller of
// each variant through each scenario, each start in a child process of its own (Self
// restart-child), as a controller's restart is a new process.
func RunRestart(ctx context.Context, o RestartOptions) ([]RestartResult, error) {
	s, cs, err := startServer(ctx, restartNS, apiserver.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	t0 := time.Now()
	if err := populate(ctx, cs, restartNS, 0, o.Objects); err != nil {
		return nil, err
	}
	o.Logf("restart: %d configmaps created in %s", o.Objects, time.Since(t0).Round(time.Second))
	admin, err := s.HTTPClient()
	if err != nil {
		return nil, err
	}
	var b *bucket
	if slices.ContainsFunc(o.Variants, inBucket) {
		if b, err = startBucket(ctx, "restart"); err != nil {
			return nil, err
		}
		defer b.close()
	}
	var out []RestartResult
	run := 0
	for _, sc := range o.Scenarios {
		for _, v := range o.Variants {
			run++
			o.Logf("restart: %s through %s", v, sc)
			r, err := restartOnce(ctx, o, s, cs, admin, b, run, sc, v)
			if err != nil {
				r.Err = err.Error()
				o.Logf("restart: %s through %s: %v", v, sc, err)
			}
			out = append(out, r)
			if o.OnResult != nil {
				o.OnResult(r)
			}
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
		}
	}
	return out, nil
}

func restartOnce(ctx context.Context, o RestartOptions, s *apiserver.Server, cs kubernetes.Interface, admin *http.Client, b *bucket, run int, scenario, variant string) (RestartResult, error) {
	res := RestartResult{Scenario: scenario, Variant: variant, Objects: o.Objects, Changed: o.Changed, DownSeconds: o.Down.Seconds()}
	upstream, err := rest.TransportFor(s.RESTConfig())
	if err != nil {
		return res, err
	}
	proxy, err := faultproxy.New(faultproxy.Config{Upstream: s.URL(), Transport: upstream})
	if err != nil {
		return res, err
	}
	defer proxy.Close()
	dir := filepath.Join(o.CacheDir, fmt.Sprintf("run-%d-%s-%s", run, scenario, variant))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return res, err
	}
	child := restartChild{self: o.Self, server: proxy.URL(), variant: variant, dir: dir}
	if inBucket(variant) {
		// Each start is a new pod: its local directory is new and empty, its cache in the
		// bucket, under a prefix of this run's and this variant's.
		child.extra = []string{"-cache-url", strings.Replace(b.url, "/controller?", fmt.Sprintf("/run-%d-%s?", run, variant), 1), "-cache-key-file", b.keyFile}
		child.env = b.env()
	}

	want, err := versionsIn(ctx, cs, restartNS)
	if err != nil {
		return res, err
	}
	first, err := child.start(ctx, want)
	if err != nil {
		return res, fmt.Errorf("first start: %w", err)
	}
	res.First, err = first.syncedThenStop(ctx)
	if err != nil {
		return res, fmt.Errorf("first start: %w", err)
	}

	// Down: the writer changes Changed objects, spread over the down time; in the expired
	// scenario kube-apiserver restarts meanwhile.
	downEnd := time.Now().Add(o.Down)
	writeDone := make(chan error, 1)
	go func() { writeDone <- changeWhileDown(ctx, cs, run, o.Objects, o.Changed, o.Down) }()
	if scenario == RestartExpired {
		if err := s.RestartAPIServer(ctx); err != nil {
			return res, err
		}
	}
	if err := <-writeDone; err != nil {
		return res, err
	}
	time.Sleep(time.Until(downEnd))

	if want, err = versionsIn(ctx, cs, restartNS); err != nil {
		return res, err
	}
	before, err := scrapeMetrics(ctx, admin, s.URL())
	if err != nil {
		return res, err
	}
	second, err := child.start(ctx, want)
	if err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	res.Restart, err = second.syncedThenStop(ctx)
	if err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	after, err := scrapeMetrics(ctx, admin, s.URL())
	if err != nil {
		return res, err
	}
	res.ServerRequests = map[string]int{}
	was := before.byVerbCode("configmaps")
	for k, v := range after.byVerbCode("configmaps") {
		if d := int(v - was[k]); d > 0 {
			res.ServerRequests[k] = d
		}
	}
	return res, nil
}

// changeWhileDown changes n of the objects cm-0 … cm-<objects-1>, spread over d: it deletes
// cm-<objects-run>, creates cm-r<run> (so the count stays) and updates n-2 others, evenly spread
// among them.
func changeWhileDown(ctx context.Context, cs kubernetes.Interface, run, objects, n int, d time.Duration) error {
	cms := cs.CoreV1().ConfigMaps(restartNS)
	for k := range n {
		if k > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d / time.Duration(n)):
			}
		}
		i := k * objects / n
		apply := func() error {
			switch k {
			case 0:
				return cms.Delete(ctx, fmt.Sprintf("cm-%05d", objects-run), metav1.DeleteOptions{})
			case 1:
				cm := configMap(restartNS, 0, strconv.Itoa(run))
				cm.Name = fmt.Sprintf("cm-r%d", run)
				_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
				return err
			}
			_, err := cms.Update(ctx, configMap(restartNS, i, fmt.Sprintf("r%d-%d", run, k)), metav1.UpdateOptions{})
			return err
		}
		err := apply()
		// A write that meets the restarting kube-apiserver is tried again; a retry that finds
		// the first try applied after all is done.
		for try := 0; err != nil && try < 60 && ctx.Err() == nil; try++ {
			time.Sleep(500 * time.Millisecond)
			if err = apply(); apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("change %d while down: %w", k, err)
		}
	}
	return nil
}

// restartChild starts the controller's processes.
type restartChild struct {
	self, server, variant, dir string
	extra, env                 []string
}

type runningChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func (c restartChild) start(ctx context.Context, want map[string]string) (*runningChild, error) {
	args := []string{"restart-child", "-variant", c.variant, "-server", c.server, "-cache-dir", c.dir,
		"-want-count", strconv.Itoa(len(want)), "-want-hash", strconv.FormatUint(stateHash(want), 10)}
	if c.extra != nil {
		// A new pod: a new, empty directory for each start.
		dir, err := os.MkdirTemp(c.dir, "pod-")
		if err != nil {
			return nil, err
		}
		args = append(args[:5], append([]string{"-cache-dir", dir}, args[7:]...)...)
		args = append(args, c.extra...)
	}
	cmd := variantCommand(ctx, c.variant, c.self, args...)
	cmd.Env = append(cmd.Env, c.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return &runningChild{cmd: cmd, stdin: stdin, lines: lines}, nil
}

// syncedThenStop waits for the child's report at HasSynced, then stops it (a persisted cache is
// saved as its informer stops) and waits for it to end.
func (r *runningChild) syncedThenStop(ctx context.Context) (RestartChildResult, error) {
	defer func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() }()
	var res RestartChildResult
	l, err := waitLine(ctx, r.lines, "SYNCED ", 10*time.Minute)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "SYNCED ")), &res); err != nil {
		return res, err
	}
	fmt.Fprintln(r.stdin, "stop")
	if err := expectLine(ctx, r.lines, "STOPPED", 2*time.Minute); err != nil {
		return res, err
	}
	if res.Err != "" {
		return res, errors.New(res.Err)
	}
	return res, nil
}

// RestartChildOptions is one start of a controller (RestartChild).
type RestartChildOptions struct {
	Variant, Server, CacheDir string
	// CacheURL and CacheKeyFile, when set, are the bucket VariantRewatchBucket keeps its cache in.
	CacheURL, CacheKeyFile string
	// WantCount and WantHash are the server's state (stateHash of its key → resourceVersion).
	WantCount int
	WantHash  uint64
}

// RestartChild starts a controller's informer for the configmaps of the restart namespace
// through Server, measures it until HasSynced and writes "SYNCED {json}"; then, on "stop" from
// in, stops it and writes "STOPPED".
func RestartChild(o RestartChildOptions, in io.Reader, out io.Writer) error {
	quietKlog()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	w := bufio.NewWriter(out)
	meter := &Meter{Base: http.DefaultTransport.(*http.Transport).Clone()}
	cfg := &rest.Config{Host: o.Server, Transport: meter}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var res RestartChildResult
	sampler := sampleHeap(5 * time.Millisecond)
	start := time.Now()
	s3 := newObjectStoreMeter()
	st := persist.Store(nil)
	if o.CacheURL != "" {
		if st, err = openBucket(o.CacheURL, o.CacheKeyFile, s3); err != nil {
			return err
		}
	} else if o.CacheDir != "" {
		st = persist.Dir(o.CacheDir)
	}
	inf, stop, how, err := startControllerInformer(ctx, o.Variant, cfg, cs, st)
	if err != nil {
		return err
	}
	// Polled every millisecond: cache.WaitForCacheSync polls every 100 ms, coarser than the
	// times measured.
	synced := inf.HasSynced()
	for deadline := start.Add(10 * time.Minute); !synced && time.Now().Before(deadline); synced = inf.HasSynced() {
		time.Sleep(time.Millisecond)
	}
	res.SyncSeconds = time.Since(start).Seconds()
	res.PeakHeapBytes, res.PeakLiveBytes = sampler()
	res.Requests = meter.Counts()
	res.Requests.Opens, res.Requests.Fails, res.Requests.Requests = nil, nil, nil
	res.FullStateTransfers = res.Requests.ListOps + res.Requests.WatchLists
	res.ObjectStore = s3.Counts()
	held := storeVersions(inf.GetStore())
	res.Objects = len(held)
	res.EqualAtSync = len(held) == o.WantCount && stateHash(held) == o.WantHash
	res.EqualSeconds = -1
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		held = storeVersions(inf.GetStore())
		if len(held) == o.WantCount && stateHash(held) == o.WantHash {
			res.EqualSeconds = time.Since(start).Seconds()
			break
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if how != nil {
		res.Start = how()
	}
	if !synced {
		res.Err = "never synced"
	}
	runtime.GC()
	retained := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(retained)
	res.RetainedHeapBytes = retained[0].Value.Uint64()
	runtime.KeepAlive(inf)
	b, _ := json.Marshal(res)
	fmt.Fprintf(w, "SYNCED %s\n", b)
	if err := w.Flush(); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() && sc.Text() != "stop" {
	}
	cancel()
	stop()
	fmt.Fprintln(w, "STOPPED")
	return w.Flush()
}

// startControllerInformer starts the configmap informer of a controller of variant through a
// SharedInformerFactory, rewatch's (informer/factory) or client-go's, or through a
// controller-runtime cache with rewatch's informers (VariantRewatchBucketCR). stop waits until
// it has stopped once ctx is done; how, for rewatch's, says how its start went (Stats.Start).
func startControllerInformer(ctx context.Context, variant string, cfg *rest.Config, cs kubernetes.Interface, st persist.Store) (inf cache.SharedIndexInformer, stop func(), how func() rewatch.Start, err error) {
	switch variant {
	case VariantClientGo, VariantCGList:
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(restartNS))
		inf = f.Core().V1().ConfigMaps().Informer()
		f.Start(ctx.Done())
		return inf, f.Shutdown, nil, nil
	case VariantRewatchBucketCR:
		return startControllerRuntimeInformer(ctx, cfg, st)
	default:
		f := factory.New(cs, 0, restartInformerOptions(st), informers.WithNamespace(restartNS))
		inf = f.Core().V1().ConfigMaps().Informer()
		f.Start(ctx.Done())
		return inf, f.Shutdown, func() rewatch.Start { return f.Stats()[reflect.TypeOf(&corev1.ConfigMap{})].Start }, nil
	}
}

// startControllerRuntimeInformer is the configmap informer of a controller-runtime cache of the
// restart namespace, built as a manager builds it with informer.NewControllerRuntime: the
// manager's rest.Config and NewInformer are the ones it returns. The informer returned is the
// one NewInformer built, not controller-runtime's wrapper around it.
func startControllerRuntimeInformer(ctx context.Context, cfg *rest.Config, st persist.Store) (cache.SharedIndexInformer, func(), func() rewatch.Start, error) {
	cr, err := informer.NewControllerRuntime(cfg, nil, restartInformerOptions(st))
	if err != nil {
		return nil, nil, nil, err
	}
	c, built, err := controllerRuntimeCache(cr.RESTConfig, restartNS, cr.NewInformer)
	if err != nil {
		return nil, nil, nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(runCtx) }()
	stop := func() { cancel(); <-done }
	if _, err := c.GetInformer(runCtx, &corev1.ConfigMap{}, crcache.BlockUntilSynced(false)); err != nil {
		stop()
		return nil, nil, nil, err
	}
	inf, err := built()
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	how := func() rewatch.Start { return cr.Stats(&corev1.ConfigMap{})[restartNS].Start }
	return inf, stop, how, nil
}

// restartInformerOptions are the rewatch controller's informer options: its cache persisted in
// st, saved when it stops.
func restartInformerOptions(st persist.Store) informer.Options {
	return informer.Options{Logger: slog.New(slog.DiscardHandler), Persist: st}
}

// storeVersions is namespace/name → resourceVersion of every object in a client-go store.
func storeVersions(s cache.Store) map[string]string {
	return (&TimedStore{Inner: s}).Versions()
}

// WriteRestartTable prints one row per restart.
func WriteRestartTable(w io.Writer, rs []RestartResult) {
	fmt.Fprintln(w, "| scenario | objects | changed | down s | controller | start | full-state transfers | LIST / WATCH requests (server) | time to HasSynced s | peak heap MiB | peak live heap MiB | retained heap MiB | cache = server at HasSynced | first start: sync s, peak heap MiB | object store MiB read at the restart |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.Err != "" {
			fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | error: %s |\n", r.Scenario, r.Objects, r.Changed, r.DownSeconds, r.Variant, r.Err)
			continue
		}
		lists, watches := 0, 0
		for k, n := range r.ServerRequests {
			switch {
			case strings.HasPrefix(k, "LIST "):
				lists += n
			case strings.HasPrefix(k, "WATCH "):
				watches += n
			}
		}
		x := r.Restart
		start := "—"
		if x.Start.Way != "" {
			start = x.Start.String()
		}
		store := "—"
		if x.ObjectStore.Requests > 0 {
			store = fmt.Sprintf("%.1f (%d requests)", float64(x.ObjectStore.BytesRead)/(1<<20), x.ObjectStore.Requests)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %d | %d / %d | %.2f | %.1f | %.1f | %.1f | %v | %.2f, %.1f | %s |\n",
			r.Scenario, r.Objects, r.Changed, r.DownSeconds, r.Variant, start, x.FullStateTransfers, lists, watches, x.SyncSeconds,
			float64(x.PeakHeapBytes)/(1<<20), float64(x.PeakLiveBytes)/(1<<20), float64(x.RetainedHeapBytes)/(1<<20), x.EqualAtSync,
			r.First.SyncSeconds, float64(r.First.PeakHeapBytes)/(1<<20), store)
	}
}

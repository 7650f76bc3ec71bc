package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
)

// StormOptions configures a storm run.
type StormOptions struct {
	Objects    int
	Mix        Mix
	Seed       uint64
	Variants   []string
	WriteEvery time.Duration // one configmap update per interval while the storm runs
	Self       string        // the bench binary, re-executed as "storm-child"
	// Journal is a file for rewatch's event journal ("": none): the transitions behind its
	// LISTs and waits.
	Journal string
	// MaxDuration bounds the wait for every reflector to consume the schedule.
	MaxDuration time.Duration
	Logf        func(string, ...any) `json:"-"`
}

// ChildResult is what a storm-child reports.
type ChildResult struct {
	Variant     string
	Meter       MeterCounts
	StoreTimes  []int64
	SyncedAt    int64
	ConvergedAt int64 // 0: never matched
	CPUSeconds  float64
	MaxRSSKiB   int64
	Err         string
}

// VariantResult is one reflector's storm outcome.
type VariantResult struct {
	ChildResult
	Applied                  []Applied
	ProxyLists, ProxyWatches int
	Recovery                 []float64 // seconds, per applied fault: fault end → next store mutation
	RecoveryByKind           map[FaultKind][]float64
	// WaitByKind is, per fault kind, the time from the end of the faulted request to the
	// reflector's next request (LIST or WATCH): the backoff or Retry-After wait it chose.
	WaitByKind                   map[FaultKind][]float64
	LastFaultToDelivery          float64 // seconds
	WriterStopToConverged        float64 // seconds; -1 never
	WriterStoppedAt, LastFaultAt int64
}

// StormResult is a whole run.
type StormResult struct {
	Options  StormOptions
	Schedule []Step
	Populate time.Duration
	Variants []VariantResult
}

const stormNS = "storm"

var payload = strings.Repeat("x", 1000)

// RunStorm runs the transient storm against a real kube-apiserver, one child process per
// variant, all at once on the same objects and the same schedule.
func RunStorm(ctx context.Context, o StormOptions) (*StormResult, error) {
	logf := o.Logf
	s, cs, err := startServer(ctx, stormNS, apiserver.Options{})
	if err != nil {
		return nil, err
	}
	defer s.Stop()
	t0 := time.Now()
	if err := populate(ctx, cs, stormNS, 0, o.Objects); err != nil {
		return nil, err
	}
	res := &StormResult{Options: o, Schedule: Schedule(o.Mix, o.Seed), Populate: time.Since(t0)}
	res.Options.Logf = nil
	logf("created %d configmaps in %s", o.Objects, res.Populate.Round(time.Millisecond))
	upstream, err := rest.TransportFor(s.RESTConfig())
	if err != nil {
		return nil, err
	}

	type child struct {
		variant string
		front   *Front
		proxy   *faultproxy.Proxy
		srv     *http.Server
		cmd     *exec.Cmd
		stdin   io.WriteCloser
		lines   chan string
	}
	var children []*child
	defer func() {
		for _, c := range children {
			if c.cmd.Process != nil && c.cmd.ProcessState == nil {
				_ = c.cmd.Process.Kill()
				_ = c.cmd.Wait()
			}
			_ = c.srv.Close()
			c.proxy.Close()
		}
	}()
	for _, v := range o.Variants {
		p, err := faultproxy.New(faultproxy.Config{Upstream: s.URL(), Transport: upstream, ForceJSON: true})
		if err != nil {
			return nil, err
		}
		f := NewFront(p, res.Schedule)
		f.InitialEvents = o.Objects
		f.Arm()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		cmd := variantCommand(ctx, v, o.Self, "storm-child", "-variant", v, "-server", "http://"+ln.Addr().String(),
			"-ns", stormNS, "-n", fmt.Sprint(o.Objects))
		if v == VariantRewatch && o.Journal != "" {
			cmd.Args = append(cmd.Args, "-journal", o.Journal)
		}
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		c := &child{variant: v, front: f, proxy: p, srv: srv, cmd: cmd, stdin: stdin, lines: make(chan string, 4)}
		children = append(children, c)
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 256<<20)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
			close(c.lines)
		}()
	}
	for _, c := range children {
		if err := expectLine(ctx, c.lines, "SYNCED", 5*time.Minute); err != nil {
			return nil, fmt.Errorf("%s: %w", c.variant, err)
		}
		logf("%s synced", c.variant)
	}
	// The storm: faults handed out by every front while a writer keeps events flowing.
	wctx, stopWriter := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	wwg.Add(1)
	go func() { defer wwg.Done(); writer(wctx, cs, stormNS, o.Objects, o.WriteEvery) }()
	for _, c := range children {
		select {
		case <-c.front.Done():
			logf("%s: schedule done", c.variant)
		case <-time.After(o.MaxDuration):
			logf("%s: schedule NOT done after %s (%d/%d applied)", c.variant, o.MaxDuration, len(c.front.Applied()), len(res.Schedule))
		case <-ctx.Done():
			stopWriter()
			return nil, ctx.Err()
		}
	}
	time.Sleep(5 * time.Second) // let the last recoveries deliver events
	stopWriter()
	wwg.Wait()
	writerStopped := time.Now().UnixNano()
	want, err := settledVersionsIn(ctx, cs, stormNS)
	if err != nil {
		return nil, err
	}
	wantFile := filepath.Join(os.TempDir(), fmt.Sprintf("rewatch-bench-want-%d.json", os.Getpid()))
	b, _ := json.Marshal(want)
	if err := os.WriteFile(wantFile, b, 0o600); err != nil {
		return nil, err
	}
	defer os.Remove(wantFile)
	for _, c := range children {
		fmt.Fprintf(c.stdin, "VERIFY %s\n", wantFile)
	}
	for _, c := range children {
		var cr ChildResult
		line, err := waitLine(ctx, c.lines, "RESULT ", 5*time.Minute)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.variant, err)
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "RESULT ")), &cr); err != nil {
			return nil, err
		}
		_ = c.cmd.Wait()
		vr := VariantResult{ChildResult: cr, Applied: c.front.Applied(), RecoveryByKind: map[FaultKind][]float64{}, WriterStoppedAt: writerStopped}
		vr.ProxyLists, vr.ProxyWatches = c.proxy.Counts()
		vr.Recover()
		vr.WriterStopToConverged = -1
		if cr.ConvergedAt > 0 {
			vr.WriterStopToConverged = float64(cr.ConvergedAt-writerStopped) / 1e9
		}
		res.Variants = append(res.Variants, vr)
	}
	return res, nil
}

// startServer starts a real kube-apiserver with opts (building it first if needed) with
// namespace ns and returns a clientset that may write fast.
func startServer(ctx context.Context, ns string, opts apiserver.Options) (*apiserver.Server, kubernetes.Interface, error) {
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, nil, err
	}
	s, err := apiserver.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	cs, err := fastClientWithNamespace(ctx, s.RESTConfig(), ns)
	if err != nil {
		s.Stop()
		return nil, nil, err
	}
	return s, cs, nil
}

// startHA starts an HA control plane (apiserver.StartHA) and creates ns on it.
func startHA(ctx context.Context, ns string) (*apiserver.HA, kubernetes.Interface, error) {
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, nil, err
	}
	h, err := apiserver.StartHA(ctx, apiserver.HAOptions{})
	if err != nil {
		return nil, nil, err
	}
	cs, err := fastClientWithNamespace(ctx, h.RESTConfig(), ns)
	if err != nil {
		h.Stop()
		return nil, nil, err
	}
	return h, cs, nil
}

// fastClientWithNamespace is a clientset on cfg that may write fast, with namespace ns created
// (or already there).
func fastClientWithNamespace(ctx context.Context, cfg *rest.Config, ns string) (kubernetes.Interface, error) {
	rc := rest.CopyConfig(cfg)
	rc.QPS, rc.Burst = 2000, 4000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return cs, nil
}

// nextAfter is the delay from t to the first time in ts after t, or -1.
func nextAfter(ts []int64, t int64) int64 {
	i, _ := slices.BinarySearch(ts, t+1)
	if i >= len(ts) {
		return -1
	}
	return ts[i] - t
}

func expectLine(ctx context.Context, lines <-chan string, prefix string, d time.Duration) error {
	_, err := waitLine(ctx, lines, prefix, d)
	return err
}

func waitLine(ctx context.Context, lines <-chan string, prefix string, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", fmt.Errorf("child exited before %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		case <-t.C:
			return "", fmt.Errorf("no %q within %s", prefix, d)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func configMap(ns string, i int, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i), Namespace: ns},
		Data: map[string]string{"payload": payload, "v": v}}
}

// populate creates configmaps cm-<from> … cm-<to-1> of ~1 KiB in ns, 16 at a time.
func populate(ctx context.Context, cs kubernetes.Interface, ns string, from, to int) error {
	work := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, i, "0"), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := from; i < to; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// writer updates one configmap of ns every interval, round cm-0 … cm-<n-1>.
func writer(ctx context.Context, cs kubernetes.Interface, ns string, n int, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, _ = cs.CoreV1().ConfigMaps(ns).Update(ctx, configMap(ns, i%n, fmt.Sprint(i)), metav1.UpdateOptions{})
	}
}

// StormChild is the child side: run one reflector through the front at server, report.
func StormChild(variant, server, ns string, n int, journal string, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	meter := &Meter{Base: http.DefaultTransport.(*http.Transport).Clone()}
	store := NewStoreFor(variant)
	t := Target{Server: server, GVR: sim.ConfigMaps, Namespace: ns, Transport: meter}
	if journal != "" {
		f, err := os.Create(journal)
		if err != nil {
			return err
		}
		defer f.Close()
		bw := bufio.NewWriter(f)
		defer bw.Flush()
		t.Journal = bw
	}
	done := make(chan error, 1)
	go func() { done <- RunReflector(ctx, variant, t, store) }()
	res := ChildResult{Variant: variant}
	for store.Len() < n {
		time.Sleep(20 * time.Millisecond)
	}
	res.SyncedAt = time.Now().UnixNano()
	fmt.Fprintf(out, "SYNCED %d\n", res.SyncedAt)
	sc := bufio.NewScanner(in)
	var wantFile string
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "VERIFY "); ok {
			wantFile = f
			break
		}
	}
	var want map[string]string
	b, err := os.ReadFile(wantFile)
	if err == nil {
		err = json.Unmarshal(b, &want)
	}
	if err != nil {
		res.Err = err.Error()
	} else {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if maps.Equal(store.Versions(), want) {
				res.ConvergedAt = time.Now().UnixNano()
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	meter.Stop()
	cancel()
	select {
	case err := <-done:
		if err != nil && res.Err == "" {
			res.Err = err.Error()
		}
	case <-time.After(10 * time.Second):
		res.Err += " (reflector did not stop within 10s)"
	}
	res.Meter = meter.Counts()
	res.StoreTimes = store.Times()
	slices.Sort(res.StoreTimes)
	res.CPUSeconds = processCPU().Seconds()
	res.MaxRSSKiB = peakRSSKiB()
	b, _ = json.Marshal(res)
	fmt.Fprintf(out, "RESULT %s\n", b)
	return nil
}

// Recover computes the recovery latencies: for each applied fault, the time from the end of
// the faulted request (when the client's watch failed) to the first store delivery after
// the first watch that opened after it. Deliveries of events relayed before the fault (still
// in a reflector's pipeline) therefore do not count as recovery.
func (vr *VariantResult) Recover() {
	vr.Recovery, vr.RecoveryByKind, vr.WaitByKind, vr.LastFaultAt = nil, map[FaultKind][]float64{}, map[FaultKind][]float64{}, 0
	opens := slices.Clone(vr.Meter.Opens)
	slices.Sort(opens)
	requests := slices.Clone(vr.Meter.Requests)
	slices.Sort(requests)
	for _, a := range vr.Applied {
		if a.End == 0 {
			continue
		}
		vr.LastFaultAt = max(vr.LastFaultAt, a.End)
		// The next request is the first one sent after the faulted request arrived: the proxy
		// records End only when its handler returns, which after a reset can be a few ms after
		// the client has already sent its next request.
		if w := nextAfter(requests, a.Start); w >= 0 {
			vr.WaitByKind[a.Kind] = append(vr.WaitByKind[a.Kind], float64(max(0, a.Start+w-a.End))/1e9)
		}
		o := nextAfter(opens, a.End)
		if o < 0 {
			continue
		}
		d := nextAfter(vr.StoreTimes, a.End+o)
		if d < 0 {
			continue
		}
		sec := float64(o+d) / 1e9
		vr.Recovery = append(vr.Recovery, sec)
		vr.RecoveryByKind[a.Kind] = append(vr.RecoveryByKind[a.Kind], sec)
	}
	if len(vr.Recovery) > 0 {
		vr.LastFaultToDelivery = vr.Recovery[len(vr.Recovery)-1]
	}
}

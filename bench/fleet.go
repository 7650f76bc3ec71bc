package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/sim"
)

// Fleet scenarios: each is a fault the server makes itself, not the fault proxy.
const (
	// ScenarioAPF gives the fleet's user a priority level of its own with one seat and a queue
	// of two, on a server with a small concurrency budget (--max-requests-inflight), so that
	// API Priority and Fairness answers what does not fit 429 with its own Retry-After; the
	// fleet starts all at once, and then a restart makes every member re-watch and relist at
	// once.
	ScenarioAPF = "apf"
	// ScenarioAPFReject is ScenarioAPF with a priority level that queues nothing: what does not
	// get a seat at once is rejected at once, as a held-out fleet was measured against. Run it
	// with -scenarios.
	ScenarioAPFReject = "apf-reject"
	// ScenarioRestart restarts kube-apiserver (etcd kept) twice, a gap apart.
	ScenarioRestart = "restart"
	// ScenarioCompaction compacts etcd to its current revision under a server without a watch
	// cache and then restarts it: every member's resume reaches etcd at a compacted revision
	// and gets etcd's own 410. (A compaction alone ends no watch that is keeping up.)
	ScenarioCompaction = "compaction"
	// ScenarioSlow pauses etcd (SIGSTOP) for a while: requests time out (504) and streams end.
	ScenarioSlow = "slow"
	// ScenarioHA runs on kubeadm's HA topology (three etcd members, three kube-apiservers,
	// HAProxy checking /readyz) and restarts the kube-apiservers one after the other, Gap
	// apart, as a rolling upgrade does. The server's counts are summed over all three.
	ScenarioHA = "ha"
	// ScenarioRollout restarts every member of the fleet one after another, each once the one
	// before has synced, as a rollout of a controller's Deployment restarts its replicas; the
	// server is left alone. Run it with -scenarios.
	ScenarioRollout = "rollout"
)

// FleetScenarios lists every scenario.
var FleetScenarios = []string{ScenarioAPF, ScenarioRestart, ScenarioCompaction, ScenarioSlow, ScenarioHA}

// FleetVariants are the kinds of reflector a fleet is made of.
var FleetVariants = []string{VariantRewatch, VariantClientGo, VariantCGList}

const fleetNS = "fleet"

// FleetOptions configures RunFleet.
type FleetOptions struct {
	Sizes      []int // reflectors per fleet
	Objects    int
	Scenarios  []string
	Variants   []string
	WriteEvery time.Duration
	// Gap is the time between the two restarts, and how long etcd is paused (Gap/3).
	Gap time.Duration
	// Inflight is --max-requests-inflight for the APF scenario.
	Inflight int
	// MatchTimeout bounds each wait for every store to hold the server's state (default 10
	// minutes). A fleet that misses it still reports its figures, with Unsynced set.
	MatchTimeout time.Duration
	// JournalDir, when set, receives the journal of the first member of each rewatch fleet
	// (ScenarioAPFRestart: of every member, and every member's requests of either kind).
	JournalDir string
	// RestartAfter is when ScenarioAPFRestart restarts kube-apiserver, from the fleet's start
	// (default 30 s); Window how long after the restart its requests are counted (default 30 s).
	RestartAfter, Window time.Duration
	// OnResult, when set, hears of each run as it ends: a long run's figures survive an
	// interruption.
	OnResult func(FleetResult)
	Self     string
	Logf     func(string, ...any)
}

// FleetResult is one fleet through one scenario.
type FleetResult struct {
	Scenario, Variant   string
	Reflectors, Objects int

	// From the server's own /metrics, over the scenario (configmaps only where the metric
	// has a resource label).
	ServerRequests   map[string]int // "VERB CODE" → requests
	ServerRejected   int            // apiserver_flowcontrol_rejected_requests_total
	ServerListBytes  float64        // apiserver_response_sizes_sum for LIST
	ServerCPUSeconds float64        // kube-apiserver's CPU time, from /proc
	// ServerRequestsPerSecond is the server's configmap requests per second, sampled each second.
	ServerRequestsPerSecond []float64

	// From the clients (the fleet's process).
	FullStateTransfers int   // LISTs (first pages) and watch-lists
	FullStateBytes     int64 // their bytes
	Requests           int
	TooMany            int // 429 responses received
	// MaxRequestsPerReflectorPerMinute is the busiest reflector's busiest minute: a hot loop
	// shows here.
	MaxRequestsPerReflectorPerMinute int
	// InitialSyncSeconds is the time from starting the fleet until every store held the
	// server's state; ConvergeSeconds the time from the end of the fault until every store
	// matched the server's state at that moment (the writer stops then). -1: never, within
	// MatchTimeout.
	InitialSyncSeconds, ConvergeSeconds float64
	// Unsynced is how many stores still differed from the server when a wait for them ran
	// out (Err says which); the other figures cover the run up to then.
	Unsynced                  int
	MatchTimeoutSeconds       float64
	ClientCPUSecondsPerMember float64
	ClientRSSKiBPerMember     float64
	// Rollout is what the rollout cost the fleet (ScenarioRollout only).
	Rollout *RolloutResult `json:",omitempty"`
	// Journal is the first rewatch member\'s journal, when one was kept (ScenarioAPFRestart:
	// every member's, the member's number in the %02d).
	Journal string `json:",omitempty"`

	// ScenarioAPFRestart's own figures: each member's time to a full store and back after the
	// restart (InitialSyncSeconds and ConvergeSeconds are the largest), how long the restart
	// took, the members' requests by "VERB CODE" (VERB: LIST, LIST-PAGE, WATCH, WATCHLIST;
	// code 0: no response), and where every member's requests were written.
	MemberSyncSeconds     []float64      `json:",omitempty"`
	MemberConvergeSeconds []float64      `json:",omitempty"`
	RestartSeconds        float64        `json:",omitempty"`
	ClientRequests        map[string]int `json:",omitempty"`
	RequestLog            string         `json:",omitempty"`
	Err                   string
}

// RunFleet runs every size × scenario × variant, each on a fresh kube-apiserver and etcd, the
// fleet in a child process of its own (Self fleet-child) so that its CPU and memory are its own.
func RunFleet(ctx context.Context, o FleetOptions) ([]FleetResult, error) {
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, err
	}
	var out []FleetResult
	for _, n := range o.Sizes {
		for _, sc := range o.Scenarios {
			for _, v := range o.Variants {
				o.Logf("fleet: %d × %s through %s", n, v, sc)
				run := fleetOnce
				if sc == ScenarioAPFRestart {
					run = func(ctx context.Context, o FleetOptions, n int, _, v string) (FleetResult, error) {
						return apfRestartOnce(ctx, o, n, v)
					}
				}
				r, err := run(ctx, o, n, sc, v)
				if err != nil {
					r.Err = err.Error()
					o.Logf("fleet: %d × %s through %s: %v", n, v, sc, err)
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
	}
	return out, nil
}

// unsyncedError is a wait for every store to hold the server's state that ran out.
type unsyncedError struct {
	stage         string
	differ, of    int
	timeout       time.Duration
	serverChanged bool
}

func (e *unsyncedError) Error() string {
	msg := fmt.Sprintf("%s: %d of %d stores did not hold the server's state within %v", e.stage, e.differ, e.of, e.timeout)
	if e.serverChanged {
		msg += " (and the server's state has changed since it was read)"
	}
	return msg
}

func fleetOnce(ctx context.Context, o FleetOptions, n int, scenario, variant string) (FleetResult, error) {
	timeout := o.MatchTimeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	res := FleetResult{Scenario: scenario, Variant: variant, Reflectors: n, Objects: o.Objects, InitialSyncSeconds: -1, ConvergeSeconds: -1,
		MatchTimeoutSeconds: timeout.Seconds()}
	opts := apiserver.Options{}
	switch scenario {
	case ScenarioAPF, ScenarioAPFReject:
		opts.ExtraArgs = []string{fmt.Sprintf("--max-requests-inflight=%d", o.Inflight), "--max-mutating-requests-inflight=50"}
	case ScenarioCompaction:
		opts.ExtraArgs = []string{"--watch-cache=false"}
	}
	var (
		s  *apiserver.Server // the one kube-apiserver; nil for ScenarioHA
		h  *apiserver.HA     // the HA control plane of ScenarioHA
		cs kubernetes.Interface
		// server is what the fleet reaches: the one kube-apiserver, or HAProxy in front of
		// several; limitedCfg its credential, subject to API Priority and Fairness.
		server     string
		limitedCfg *rest.Config
		admin      *http.Client
		acc        *serverTotals
		err        error
	)
	if scenario == ScenarioHA {
		if h, cs, err = startHA(ctx, fleetNS); err != nil {
			return res, err
		}
		defer h.Stop()
		server, limitedCfg = h.URL(), h.LimitedRESTConfig()
		// Every request on a connection of its own (HTTP/1.1, no keep-alive), which HAProxy's
		// round robin places as it places the connections of separate clients: over HTTP/2 the
		// front's one connection would put the whole fleet on one kube-apiserver, and a pool of
		// kept-alive connections would send a member's retry wherever the pool's last
		// connection went.
		limitedCfg.NextProtos = []string{"http/1.1"}
		limitedCfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil } // a transport of its own
		limitedCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if t, ok := rt.(*http.Transport); ok {
				t.DisableKeepAlives = true
			}
			return rt
		}
		var procs []apiserverProc
		for i := range h.APIServers() {
			procs = append(procs, haAPIServer{h, i})
		}
		acc = newServerTotals(procs...)
		admin, err = h.HTTPClient()
	} else {
		if s, cs, err = startServer(ctx, fleetNS, opts); err != nil {
			return res, err
		}
		defer s.Stop()
		server, limitedCfg = s.URL(), s.LimitedRESTConfig()
		acc = newServerTotals(s)
		admin, err = s.HTTPClient()
	}
	if err != nil {
		return res, err
	}
	if err := populate(ctx, cs, fleetNS, 0, o.Objects); err != nil {
		return res, err
	}
	if scenario == ScenarioAPF || scenario == ScenarioAPFReject {
		if err := throttleFleet(ctx, cs, scenario == ScenarioAPFReject); err != nil {
			return res, err
		}
	}
	// The fleet reaches the server through a plain-HTTP front that holds a credential subject
	// to API Priority and Fairness (an admin's requests are exempt); it injects nothing.
	limited, err := rest.TransportFor(limitedCfg)
	if err != nil {
		return res, err
	}
	front, err := faultproxy.New(faultproxy.Config{Upstream: server, Transport: limited})
	if err != nil {
		return res, err
	}
	defer front.Close()
	// The server's counters and CPU time start afresh with each kube-apiserver process, so the
	// figures are added up process by process: each one's end minus its start.
	if err := acc.begin(ctx, admin); err != nil {
		return res, err
	}

	// The server's request rate, sampled each second, for the chart.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var rates []float64
	sampled := make(chan struct{})
	// stopRates ends the sampler and hands over what it sampled; the deferred call makes sure
	// the sampler never outlives the run.
	stopRates := func() []float64 { stopSampling(); <-sampled; return rates }
	defer stopSampling()
	go func() {
		defer close(sampled)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := -1.0
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
			total, ok := acc.requestsNow(sampleCtx, admin)
			if !ok {
				continue // restarting
			}
			if last >= 0 {
				rates = append(rates, max(0, total-last))
			}
			last = total
		}
	}()

	args := []string{"fleet-child", "-variant", variant, "-server", front.URL(), "-n", strconv.Itoa(n)}
	var childEnv []string
	switch {
	case variant == VariantRewatchBucket:
		// Every member keeps its cache in one bucket, as a Deployment's replicas would.
		b, err := startBucket(ctx, "fleet")
		if err != nil {
			return res, err
		}
		defer b.close()
		args, childEnv = append(args, b.args()...), b.env()
	case scenario == ScenarioRollout || variant == VariantRewatchEmptyDir:
		// Each member keeps its cache in a directory of its own, as each replica would on
		// its own volume (a StatefulSet's); VariantRewatchEmptyDir's members find theirs empty
		// at every start, as a Deployment's new pods find their emptyDir.
		dir, err := os.MkdirTemp("", "rewatch-fleet-cache-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		args = append(args, "-cache-dir", dir)
	}
	if o.JournalDir != "" {
		res.Journal = filepath.Join(o.JournalDir, fmt.Sprintf("fleet-%s-%d-%s-%s.journal", scenario, n, variant, time.Now().Format("150405")))
		args = append(args, "-journal", res.Journal)
	}
	cmd := variantCommand(ctx, variant, o.Self, args...)
	cmd.Env = append(cmd.Env, childEnv...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	fleetStart := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	defer endChild(cmd, stdin)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// The writer runs but for while the fleet is checked against a state of the server.
	stopWriter := func() {}
	defer func() { stopWriter() }()
	startWriter := func() {
		writeCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		stopWriter = func() { cancel(); <-done }
		go func() { defer close(done); writer(writeCtx, cs, fleetNS, o.Objects, o.WriteEvery) }()
	}
	startWriter()
	// matched stops the writer and asks the fleet to report once every store equals the
	// server's state then; it returns the seconds from since until they did, or an
	// *unsyncedError when they did not within the timeout.
	matched := func(stage string, since time.Time) (float64, error) {
		stopWriter()
		v, err := settledVersionsIn(ctx, cs, fleetNS)
		if err != nil {
			return -1, err
		}
		fmt.Fprintf(stdin, "match %d %d %d\n", len(v), stateHash(v), timeout.Milliseconds())
		// The child gives up after timeout and says so; the margin is for its reply.
		l, err := waitLine(ctx, lines, "MATCHED", timeout+time.Minute)
		if err != nil {
			return -1, fmt.Errorf("%s: the fleet did not answer: %w", stage, err)
		}
		if rest, ok := strings.CutPrefix(l, "MATCHED timeout "); ok {
			e := &unsyncedError{stage: stage, timeout: timeout}
			if _, err := fmt.Sscanf(rest, "%d %d", &e.differ, &e.of); err != nil {
				return -1, fmt.Errorf("%s: unreadable answer %q", stage, l)
			}
			if now, err := versionsIn(ctx, cs, fleetNS); err == nil && stateHash(now) != stateHash(v) {
				e.serverChanged = true
			}
			return -1, e
		}
		return time.Since(since).Seconds(), nil
	}
	// A fleet that does not get in sync is a finding, not a failed run: its requests, 429s and
	// costs up to then are what explain it, so they are collected as for any other run.
	var unsynced *unsyncedError
	res.InitialSyncSeconds, err = matched("initial sync", fleetStart)
	if errors.As(err, &unsynced) {
		return collectFleetFigures(ctx, res, acc, admin, stdin, lines, stopRates, unsynced)
	}
	if err != nil {
		return res, err
	}
	startWriter()
	time.Sleep(5 * time.Second) // steady state with writes

	switch scenario {
	case ScenarioAPF, ScenarioAPFReject:
		err = acc.restart(ctx, 0, admin)
	case ScenarioCompaction:
		if err = s.Compact(ctx); err == nil {
			err = acc.restart(ctx, 0, admin)
		}
	case ScenarioHA:
		// A rolling restart: each kube-apiserver in turn, back and counted up by the load
		// balancer before the gap to the next begins.
		for i := range h.APIServers() {
			if err = acc.restart(ctx, i, admin); err != nil {
				break
			}
			if i < h.APIServers()-1 {
				time.Sleep(o.Gap)
			}
		}
	case ScenarioRestart:
		for i := range 2 {
			if err = acc.restart(ctx, 0, admin); err != nil {
				break
			}
			if i == 0 {
				time.Sleep(o.Gap)
			}
		}
	case ScenarioRollout:
		fmt.Fprintf(stdin, "rollout %d\n", timeout.Milliseconds())
		var l string
		// Each member may take up to timeout; the margin is for the reply.
		if l, err = waitLine(ctx, lines, "ROLLED ", time.Duration(n)*timeout+time.Minute); err == nil {
			res.Rollout = &RolloutResult{}
			err = json.Unmarshal([]byte(strings.TrimPrefix(l, "ROLLED ")), res.Rollout)
		}
	case ScenarioSlow:
		if err = s.PauseEtcd(); err == nil {
			time.Sleep(o.Gap / 3)
			err = s.ResumeEtcd()
		}
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", scenario, err)
	}
	res.ConvergeSeconds, err = matched("converge", time.Now())
	if err != nil && !errors.As(err, &unsynced) {
		return res, err
	}
	return collectFleetFigures(ctx, res, acc, admin, stdin, lines, stopRates, unsynced)
}

// collectFleetFigures ends the run's accounts: the server's totals since the last start, the
// sampled request rates and the fleet's own report. unsynced, when not nil, is returned as
// the run's error after the figures are in.
func collectFleetFigures(ctx context.Context, res FleetResult, acc *serverTotals, admin *http.Client,
	stdin io.Writer, lines <-chan string, stopRates func() []float64, unsynced *unsyncedError) (FleetResult, error) {
	res.ServerRequestsPerSecond = stopRates()
	if err := acc.end(ctx, admin); err != nil {
		return res, err
	}
	res.ServerCPUSeconds, res.ServerRejected, res.ServerListBytes = acc.cpu, int(acc.rejected), acc.listBytes
	res.ServerRequests = map[string]int{}
	for k, v := range acc.requests {
		res.ServerRequests[k] = int(v)
	}

	fmt.Fprintln(stdin, "report")
	l, err := waitLine(ctx, lines, "RESULT ", time.Minute)
	if err != nil {
		return res, err
	}
	var c fleetChildResult
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "RESULT ")), &c); err != nil {
		return res, err
	}
	res.FullStateTransfers, res.FullStateBytes = c.Meter.ListOps+c.Meter.WatchLists, c.Meter.ListBytes+c.Meter.WatchListBytes
	res.Requests, res.TooMany = c.Meter.Lists+c.Meter.Watches+c.Meter.WatchLists, c.Meter.TooMany
	res.MaxRequestsPerReflectorPerMinute = c.MaxPerMinute
	n := float64(res.Reflectors)
	res.ClientCPUSecondsPerMember, res.ClientRSSKiBPerMember = c.CPUSeconds/n, float64(c.MaxRSSKiB)/n
	if unsynced != nil {
		res.Unsynced = unsynced.differ
		return res, unsynced
	}
	return res, nil
}

// apiserverProc is one kube-apiserver process line of a run: its own address (for /metrics),
// its CPU time and a restart. *apiserver.Server is one; haAPIServer is one of an HA control
// plane's.
type apiserverProc interface {
	URL() string
	CPUSeconds() (float64, error)
	RestartAPIServer(ctx context.Context) error
}

// haAPIServer is kube-apiserver i of an HA control plane.
type haAPIServer struct {
	h *apiserver.HA
	i int
}

func (a haAPIServer) URL() string                  { return a.h.APIServerURL(a.i) }
func (a haAPIServer) CPUSeconds() (float64, error) { return a.h.CPUSeconds(a.i) }
func (a haAPIServer) RestartAPIServer(ctx context.Context) error {
	return a.h.RestartAPIServer(ctx, a.i)
}

// serverTotals adds up the server's own figures over the kube-apiserver processes of a run,
// summed over every kube-apiserver of the control plane.
type serverTotals struct {
	procs     []apiserverProc
	start     []metricSamples // per kube-apiserver, since its current process's begin
	startCPU  []float64
	requests  map[string]float64
	rejected  float64
	listBytes float64
	cpu       float64
}

func newServerTotals(procs ...apiserverProc) *serverTotals {
	return &serverTotals{procs: procs, start: make([]metricSamples, len(procs)), startCPU: make([]float64, len(procs)),
		requests: map[string]float64{}}
}

func (t *serverTotals) begin(ctx context.Context, admin *http.Client) error {
	for i, p := range t.procs {
		m, err := scrapeMetrics(ctx, admin, p.URL())
		if err != nil {
			return err
		}
		t.start[i] = m
		if t.startCPU[i], err = p.CPUSeconds(); err != nil {
			return err
		}
	}
	return nil
}

// end adds what each current process did since begin.
func (t *serverTotals) end(ctx context.Context, admin *http.Client) error {
	for i := range t.procs {
		if err := t.endOne(ctx, i, admin); err != nil {
			return err
		}
	}
	return nil
}

func (t *serverTotals) endOne(ctx context.Context, i int, admin *http.Client) error {
	p := t.procs[i]
	m, err := scrapeMetrics(ctx, admin, p.URL())
	if err != nil {
		return err
	}
	cpu, err := p.CPUSeconds()
	if err != nil {
		return err
	}
	t.cpu += cpu - t.startCPU[i]
	before := t.start[i].byVerbCode("configmaps")
	for k, v := range m.byVerbCode("configmaps") {
		t.requests[k] += v - before[k]
	}
	const rejected = "apiserver_flowcontrol_rejected_requests_total"
	t.rejected += m.sum(rejected, nil) - t.start[i].sum(rejected, nil)
	list := map[string]string{"resource": "configmaps", "verb": "LIST"}
	t.listBytes += m.sum("apiserver_response_sizes_sum", list) - t.start[i].sum("apiserver_response_sizes_sum", list)
	return nil
}

// restart ends kube-apiserver i's current process's account, restarts it and begins the next.
func (t *serverTotals) restart(ctx context.Context, i int, admin *http.Client) error {
	if err := t.endOne(ctx, i, admin); err != nil {
		return err
	}
	if err := t.procs[i].RestartAPIServer(ctx); err != nil {
		return err
	}
	// The new process counts from zero, its start-up included: the restart's cost is the
	// server's, whatever the fleet.
	t.start[i], t.startCPU[i] = nil, 0
	return nil
}

// requestsNow is the configmap requests every kube-apiserver has counted, for the sampled
// rate; false while one of them is restarting (its counter would start afresh).
func (t *serverTotals) requestsNow(ctx context.Context, admin *http.Client) (float64, bool) {
	total := 0.0
	for _, p := range t.procs {
		m, err := scrapeMetrics(ctx, admin, p.URL())
		if err != nil {
			return 0, false // the sample is dropped: the others need not be read
		}
		total += m.sum("apiserver_request_total", map[string]string{"resource": "configmaps"})
	}
	return total, true
}

// settledVersionsIn reads the server's state until two reads two seconds apart agree (at most
// ten times; then the last read stands, and a fleet that cannot match it says so). A write
// the stopped writer sent just before it was cancelled can still be applied afterwards (after
// etcd was paused it sits in etcd's queue until etcd resumes); a fleet compared against the
// state before it would never match.
func settledVersionsIn(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, error) {
	v, err := versionsIn(ctx, cs, ns)
	for range 10 {
		if err != nil {
			return nil, err
		}
		time.Sleep(2 * time.Second)
		var next map[string]string
		if next, err = versionsIn(ctx, cs, ns); err == nil && stateHash(next) == stateHash(v) {
			return v, nil
		}
		v = next
	}
	return v, err
}

func versionsIn(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(l.Items))
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out, nil
}

// stateHash is an order-free digest of key=resourceVersion pairs, so the parent and the child
// compare states without shipping them.
func stateHash(v map[string]string) uint64 {
	var sum uint64
	for k, rv := range v {
		h := fnv.New64a()
		_, _ = io.WriteString(h, k+"="+rv)
		sum += h.Sum64()
	}
	return sum
}

// FleetChildOptions is what a fleet's child runs (FleetChild).
type FleetChildOptions struct {
	Variant, Server string
	N               int
	Journal         string
	// CacheDir holds each rewatch member's persisted cache, a directory of its own;
	// CacheURL and CacheKeyFile, when set, the bucket every member shares instead.
	CacheDir, CacheURL, CacheKeyFile string
}

type fleetChildResult struct {
	Meter        MeterCounts
	ObjectStore  ObjectStoreCounts
	MaxPerMinute int
	CPUSeconds   float64
	MaxRSSKiB    int64
}

// FleetChild runs n reflectors of variant against server, sharing one meter, and answers the
// parent on in: "match COUNT HASH MILLIS" (reply "MATCHED" once every store holds that state,
// or "MATCHED timeout DIFFERING N" after MILLIS), "rollout MILLIS" (restart every member one
// after another, each once the one before has synced, as a rollout of a controller's replicas
// does; reply "ROLLED {json}") and "report" (reply "RESULT {json}"). cacheDir, when set, holds
// each rewatch member's persisted cache, a directory of its own.
//
// For ScenarioAPFRestart it also answers "full COUNT MILLIS" (every store holds COUNT objects;
// reply "FULL ok|timeout" and each member's seconds from the child's start), "mark" (reply
// "MARKED"), "holds KEY MILLIS" (every store holds KEY; each member's seconds from the mark),
// "requests PATH" (every member's requests as JSON lines; reply "REQUESTS") and "stats" (the
// members' requests by verb and code; reply "STATS {json}").
func FleetChild(o FleetChildOptions, in io.Reader, out io.Writer) error {
	variant, server, n, journal, cacheDir := o.Variant, o.Server, o.N, o.Journal, o.CacheDir
	// N members would each log every failure; the parent's figures say what happened.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	quietKlog()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	meter := &Meter{Base: &http.Transport{MaxIdleConnsPerHost: n + 10}}
	s3 := newObjectStoreMeter()
	members := make([]*fleetMember, n)
	meters := make([]*Meter, n)
	// The first member of a rewatch fleet keeps a journal: it says why that member did what it
	// did, request by request (rewatch replay). A journal path with a %d verb is every
	// member's, numbered.
	every := strings.Contains(journal, "%")
	for i := range n {
		// Each member has a meter of its own over the shared one, for its requests per minute
		// and its timeline.
		meters[i] = &Meter{Base: meter, Log: true}
		t := Target{Server: server, GVR: sim.ConfigMaps, Namespace: fleetNS, Transport: meters[i]}
		if journal != "" && isRewatch(variant) && (i == 0 || every) {
			path := journal
			if every {
				path = fmt.Sprintf(journal, i)
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			t.Journal = f
		}
		m := &fleetMember{variant: variant}
		switch {
		case o.CacheURL != "":
			// A new pod opens the bucket at each start, with no cache of its own.
			m.persist = func() (persist.Store, error) { return openBucket(o.CacheURL, o.CacheKeyFile, s3) }
		case cacheDir != "" && variant == VariantRewatchEmptyDir:
			m.persist = func() (persist.Store, error) {
				dir, err := os.MkdirTemp(cacheDir, fmt.Sprintf("member-%d-", i))
				if err != nil {
					return nil, err
				}
				return persist.Dir(filepath.Join(dir, "cache")), nil
			}
		case cacheDir != "":
			t.CacheDir = filepath.Join(cacheDir, fmt.Sprintf("member-%d", i))
		}
		m.target = t
		members[i] = m
		members[i].start(ctx)
	}
	stores := func() []*TimedStore {
		out := make([]*TimedStore, n)
		for i, m := range members {
			out[i] = m.current()
		}
		return out
	}
	w := bufio.NewWriter(out)
	sc := bufio.NewScanner(in)
	started, marked := time.Now(), time.Now()
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "full":
			count, _ := strconv.Atoi(f[1])
			millis, _ := strconv.ParseInt(f[2], 10, 64)
			t := waitMembers(stores, started, time.Duration(millis)*time.Millisecond, func(s *TimedStore) bool { return s.Len() >= count })
			fmt.Fprintf(w, "FULL %s\n", t)
		case len(f) == 1 && f[0] == "mark":
			marked = time.Now()
			fmt.Fprintln(w, "MARKED")
		case len(f) == 3 && f[0] == "holds":
			millis, _ := strconv.ParseInt(f[2], 10, 64)
			t := waitMembers(stores, marked, time.Duration(millis)*time.Millisecond, func(s *TimedStore) bool { return s.Has(f[1]) })
			fmt.Fprintf(w, "HELD %s\n", t)
		case len(f) == 2 && f[0] == "requests":
			if err := writeRequestLogs(f[1], started, meters); err != nil {
				return err
			}
			fmt.Fprintln(w, "REQUESTS")
		case len(f) == 1 && f[0] == "stats":
			by := map[string]int{}
			for _, m := range meters {
				for _, r := range m.Records() {
					by[fmt.Sprintf("%s %d", r.Kind, r.Code)]++
				}
			}
			b, _ := json.Marshal(by)
			fmt.Fprintf(w, "STATS %s\n", b)
		case len(f) == 4 && f[0] == "match":
			want, _ := strconv.ParseUint(f[2], 10, 64)
			millis, _ := strconv.ParseInt(f[3], 10, 64)
			deadline := time.Now().Add(time.Duration(millis) * time.Millisecond)
			off := differing(stores(), want)
			for off > 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
				off = differing(stores(), want)
			}
			if off == 0 {
				fmt.Fprintln(w, "MATCHED")
			} else {
				fmt.Fprintf(w, "MATCHED timeout %d %d\n", off, n)
			}
		case len(f) == 2 && f[0] == "rollout":
			millis, _ := strconv.ParseInt(f[1], 10, 64)
			b, _ := json.Marshal(rollout(ctx, members, meter, s3, time.Duration(millis)*time.Millisecond))
			fmt.Fprintf(w, "ROLLED %s\n", b)
		case len(f) == 1 && f[0] == "report":
			r := fleetChildResult{Meter: meter.Counts(), ObjectStore: s3.Counts(), CPUSeconds: processCPU().Seconds(), MaxRSSKiB: peakRSSKiB()}
			r.Meter.Opens, r.Meter.Fails, r.Meter.Requests = nil, nil, nil
			for _, m := range meters {
				r.MaxPerMinute = max(r.MaxPerMinute, busiestMinute(m.Counts().Requests))
			}
			b, _ := json.Marshal(r)
			fmt.Fprintf(w, "RESULT %s\n", b)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	cancel()
	for _, m := range members {
		m.wait()
	}
	return nil
}

// fleetMember is one reflector of a fleet, which a rollout restarts: stopped (a persisted cache
// is saved then), and started again with an empty store, as a new process would be.
type fleetMember struct {
	variant string
	target  Target
	// persist, when set, is the store a start keeps its cache in: a new pod's.
	persist func() (persist.Store, error)

	mu     sync.Mutex
	store  *TimedStore
	synced func() bool
	cancel context.CancelFunc
	done   chan struct{}
}

func (m *fleetMember) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	store := NewStoreFor(m.variant)
	done := make(chan struct{})
	// client-go's reflector applies a full state with one Replace, its store's first mutation;
	// rewatch's says when it has synced (a store filled from a snapshot has not yet).
	synced := func() bool { return len(store.Times()) > 0 }
	var reflector chan func() bool
	t := m.target
	if m.persist != nil {
		st, err := m.persist()
		if err != nil {
			fmt.Fprintf(os.Stderr, "fleet member: %v\n", err)
		}
		t.Persist = st
	}
	if isRewatch(m.variant) {
		reflector = make(chan func() bool, 1)
		t.OnReflector = func(r *rewatch.Reflector) { reflector <- r.HasSynced }
	}
	go func() {
		defer close(done)
		if err := RunReflector(ctx, m.variant, t, store); err != nil {
			fmt.Fprintf(os.Stderr, "fleet member: %v\n", err)
		}
	}()
	if reflector != nil {
		select {
		case synced = <-reflector:
		case <-done:
			synced = func() bool { return false }
		}
	}
	m.mu.Lock()
	m.store, m.synced, m.cancel, m.done = store, synced, cancel, done
	m.mu.Unlock()
}

func (m *fleetMember) current() *TimedStore {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.store
}

// wait waits for the member's reflector to return (its context must be done).
func (m *fleetMember) wait() {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	<-done
}

// restart stops the member, waits for its reflector to return, starts it again and waits up to
// timeout for it to sync; false if it did not.
func (m *fleetMember) restart(ctx context.Context, timeout time.Duration) bool {
	m.mu.Lock()
	m.cancel()
	m.mu.Unlock()
	m.wait()
	m.start(ctx)
	m.mu.Lock()
	synced := m.synced
	m.mu.Unlock()
	for deadline := time.Now().Add(timeout); !synced(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
	}
	return true
}

// RolloutResult is what a rollout of a fleet cost, from the fleet's side.
type RolloutResult struct {
	// FullStateTransfers are the LISTs (first pages; a limit=1 read left out) and watch-lists
	// the whole fleet made from the rollout's start to its end; Probes the limit=1 LISTs.
	FullStateTransfers, Probes int
	Seconds                    float64
	// Unsynced is how many members did not sync within the timeout after their restart.
	Unsynced int
	// FullStateBytes are the bytes of those LISTs (every page) and watch-lists; ServerBytes
	// every byte read from kube-apiserver over the rollout: those, and the watch streams
	// (which carry the writer's events to every member throughout).
	FullStateBytes, ServerBytes int64
	// ObjectStore is what the fleet asked of the object store over the rollout
	// (VariantRewatchBucket): requests, bytes read (the snapshots loaded), bytes written.
	ObjectStore ObjectStoreCounts
}

// rollout restarts every member in turn, each once the one before has synced or timeout passed.
func rollout(ctx context.Context, members []*fleetMember, meter *Meter, s3 *ObjectStoreMeter, timeout time.Duration) RolloutResult {
	before, start := meter.Counts(), time.Now()
	s3Before := s3.Counts()
	var r RolloutResult
	for _, m := range members {
		if !m.restart(ctx, timeout) {
			r.Unsynced++
		}
	}
	after := meter.Counts()
	r.Seconds = time.Since(start).Seconds()
	r.FullStateTransfers = after.ListOps + after.WatchLists - before.ListOps - before.WatchLists
	r.Probes = after.Probes - before.Probes
	r.FullStateBytes = after.ListBytes + after.WatchListBytes - before.ListBytes - before.WatchListBytes
	r.ServerBytes = r.FullStateBytes + after.WatchBytes - before.WatchBytes
	r.ObjectStore = s3.Counts().Sub(s3Before)
	return r
}

// quietKlog sends klog's lines (client-go's) nowhere: a child's figures say what happened.
func quietKlog() {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
}

// writeRequestLogs writes every member's requests as JSON lines: the member's number, and each
// record's times in seconds from the fleet's start.
func writeRequestLogs(path string, started time.Time, meters []*Meter) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	at := func(ns int64) float64 {
		if ns == 0 {
			return -1
		}
		return time.Unix(0, ns).Sub(started).Seconds()
	}
	for i, m := range meters {
		for _, r := range m.Records() {
			_ = enc.Encode(struct {
				Member     int     `json:"member"`
				At         float64 `json:"at"`
				Kind       string  `json:"kind"`
				Code       int     `json:"code"`
				End        float64 `json:"end"`
				RetryAfter string  `json:"retryAfter,omitempty"`
			}{i, at(r.At), r.Kind, r.Code, at(r.End), r.Retry})
		}
	}
	if err := bw.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// differing counts the stores whose state is not the server's (want is its stateHash).
func differing(stores []*TimedStore, want uint64) int {
	n := 0
	for _, s := range stores {
		if stateHash(s.Versions()) != want {
			n++
		}
	}
	return n
}

// busiestMinute is the most request times (unix nanos, ascending) in any 60-second window.
func busiestMinute(ts []int64) int {
	slices.Sort(ts)
	best, j := 0, 0
	for i := range ts {
		for ts[i]-ts[j] >= int64(time.Minute) {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// metricSamples is a /metrics scrape: each sample's name, labels and value.
type metricSamples []metricSample

type metricSample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrapeMetrics reads the server's Prometheus text exposition. Only plain samples are kept
// (name{label="value",…} number), which is all the counters and sums used here need.
func scrapeMetrics(ctx context.Context, hc *http.Client, base string) (metricSamples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	var out metricSamples
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s, ok := parseSample(line)
		if ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

func parseSample(line string) (metricSample, bool) {
	s := metricSample{labels: map[string]string{}}
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return s, false
		}
		s.name = line[:i]
		for _, kv := range splitLabels(line[i+1 : j]) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return s, false
			}
			uq, err := strconv.Unquote(v)
			if err != nil {
				return s, false
			}
			s.labels[k] = uq
		}
		rest = strings.TrimSpace(line[j+1:])
	} else {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			return s, false
		}
		s.name, rest = name, value
	}
	value, _, _ := strings.Cut(rest, " ")
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return s, false
	}
	s.value = v
	return s, true
}

// splitLabels splits a="x",b="y" at the commas between pairs, not those inside quotes.
func splitLabels(s string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// sum adds the samples of name whose labels include match.
func (m metricSamples) sum(name string, match map[string]string) float64 {
	var total float64
	for _, s := range m {
		if s.name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.value
		}
	}
	return total
}

// byVerbCode is apiserver_request_total of resource by "VERB CODE".
func (m metricSamples) byVerbCode(resource string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if s.name == "apiserver_request_total" && s.labels["resource"] == resource {
			out[s.labels["verb"]+" "+s.labels["code"]] += s.value
		}
	}
	return out
}

// WriteFleetTable prints one row per fleet run.
func WriteFleetTable(w io.Writer, rs []FleetResult) {
	fmt.Fprintln(w, "| scenario | reflectors | kind | full-state transfers | full-state MiB | requests (client) | requests (server) | 429s | server rejected | peak server req/s | busiest member req/min | initial sync s | converge s | server CPU s | client CPU ms/member | client RSS KiB/member |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.Err != "" && r.Unsynced == 0 {
			fmt.Fprintf(w, "| %s | %d | %s | error: %s |\n", r.Scenario, r.Reflectors, r.Variant, r.Err)
			continue
		}
		peak := 0.0
		for _, v := range r.ServerRequestsPerSecond {
			peak = max(peak, v)
		}
		served := 0 // the fleet's reads: the writer's updates left out
		for k, n := range r.ServerRequests {
			if !strings.HasPrefix(k, "UPDATE ") {
				served += n
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %.1f | %d | %d | %d | %d | %.0f | %d | %s | %s | %.1f | %.0f | %.0f |\n",
			r.Scenario, r.Reflectors, r.Variant, r.FullStateTransfers, float64(r.FullStateBytes)/(1<<20), r.Requests, served, r.TooMany,
			r.ServerRejected, peak, r.MaxRequestsPerReflectorPerMinute, r.syncCell(r.InitialSyncSeconds, true),
			r.syncCell(r.ConvergeSeconds, r.InitialSyncSeconds >= 0), r.ServerCPUSeconds, r.ClientCPUSecondsPerMember*1000, r.ClientRSSKiBPerMember)
	}
}

// WriteRolloutTable prints one row per rollout run (ScenarioRollout).
func WriteRolloutTable(w io.Writer, rs []FleetResult) {
	fmt.Fprintln(w, "| reflectors | objects | kind | full-state transfers in the rollout | limit=1 reads | members not synced after their restart | rollout s | full-state MiB from kube-apiserver | all MiB from kube-apiserver (watch streams included) | object store: MiB read / written, requests (snapshots written, writes refused, uploads aborted) | every store = server at the end: s to match |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	const mib = 1 << 20
	for _, r := range rs {
		if r.Rollout == nil {
			continue
		}
		x := r.Rollout
		store := "—"
		if x.ObjectStore.Requests > 0 {
			store = fmt.Sprintf("%.1f / %.1f, %d (%d snapshots written, %d refused, %d uploads aborted)", float64(x.ObjectStore.BytesRead)/mib,
				float64(x.ObjectStore.BytesWritten)/mib, x.ObjectStore.Requests, x.ObjectStore.Committed, x.ObjectStore.Refused, x.ObjectStore.Aborted)
		}
		fmt.Fprintf(w, "| %d | %d | %s | %d | %d | %d | %.0f | %.1f | %.1f | %s | %s |\n", r.Reflectors, r.Objects, r.Variant, x.FullStateTransfers, x.Probes,
			x.Unsynced, x.Seconds, float64(x.FullStateBytes)/mib, float64(x.ServerBytes)/mib, store, r.syncCell(r.ConvergeSeconds, r.InitialSyncSeconds >= 0))
	}
}

// syncCell shows a time to get in sync: for the stage that ran out (reached, and not in sync)
// how many stores were behind, and a dash for a stage never reached.
func (r FleetResult) syncCell(seconds float64, reached bool) string {
	switch {
	case seconds >= 0:
		return fmt.Sprintf("%.1f", seconds)
	case !reached:
		return "—"
	case r.Unsynced > 0:
		return fmt.Sprintf("> %.0f (%d of %d not in sync)", r.MatchTimeoutSeconds, r.Unsynced, r.Reflectors)
	default:
		return "never"
	}
}

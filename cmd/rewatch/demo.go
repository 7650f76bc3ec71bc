package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
)

const demoExample = `  # The default: 200 configmaps, every kind of fault, 20 seconds:
  rewatch demo

  # A short run with only 410s and resets, recorded for replay:
  rewatch demo --duration 5s --faults 410=2,reset=1 --journal demo.journal`

// demoDefaults keep every wait short so that a 20 s demo shows each fault and its recovery.
// The InternalError window is long so that every injected InternalError is re-watched; the
// LIST check accounts for relists past the window when a user shortens it.
func demoDefaults() tunables {
	t := libraryDefaults()
	t.policy.InternalErrorWindow = 10 * time.Minute
	t.policy.RetryAfterCap = time.Second
	t.backoffInitial, t.backoffCap = 100*time.Millisecond, time.Second
	return t
}

// Bounds on the demo's own waits. They only matter when something is broken; the demo then
// fails with a message instead of hanging.
const (
	demoStepTimeout     = 15 * time.Second
	demoConvergeTimeout = 20 * time.Second
	demoPoll            = 10 * time.Millisecond
)

type demoOptions struct {
	objects     int
	faults      map[faultKind]int
	seed        uint64
	duration    time.Duration
	rate        float64
	output      string
	journalPath string
	tun         tunables
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		o         demoOptions
		faultSpec string
	)
	fs := newFlagSet("demo", "[flags]",
		"Run the real reflector over loopback HTTP against an embedded simulated API server, through a\n"+
			"fault-injecting proxy, while a writer creates, updates and deletes configmaps. Faults are\n"+
			"injected one at a time in a seeded order, each after the reflector has recovered from the\n"+
			"last. At the end the writer stops and the demo checks that the cache equals the server's\n"+
			"state and that the reflector listed exactly once plus once per 410. Needs no cluster.\n\n"+
			"--faults is a comma list of kind=count (kind alone means 1; \"none\" injects nothing):\n"+
			"  429-start  the next WATCH is answered 429 with Retry-After: 1\n"+
			"  429-event  a 429 Status arrives as an ERROR event in an open watch\n"+
			"  internal   a 500 InternalError arrives as an ERROR event\n"+
			"  reset      the watch connection is reset (TCP RST) mid-stream\n"+
			"  drop       the server ends every watch stream\n"+
			"  410        the server compacts while the re-watch is held back, and answers it with 410\n"+
			"Faults other than drop and 410 apply to the next WATCH; the demo ends the current stream to\n"+
			"open one, which shows up as an extra stream-ended transition.",
		demoExample, stdout)
	fs.IntVar(&o.objects, "objects", 200, "configmaps on the server at start; the writer keeps the count near it")
	fs.StringVar(&faultSpec, "faults", defaultFaultSpec, "faults to inject (see above)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed for the fault order, the writer and the reflector's jitter")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "how long the writer runs (longer if the faults need it)")
	fs.Float64Var(&o.rate, "rate", 25, "writes per second")
	fs.StringVar(&o.output, "output", "text", "output format: text or json (JSON lines)")
	fs.StringVar(&o.journalPath, "journal", "", "write the reflector's event journal to this file (replay with rewatch replay)")
	o.tun.register(fs.FlagSet, demoDefaults())
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if err := choice("output", o.output, "text", "json"); err != nil {
		return err
	}
	if err := o.tun.validate(); err != nil {
		return err
	}
	switch {
	case o.objects < 0 || o.objects > 100000:
		return usagef("--objects must be between 0 and 100000")
	case o.duration <= 0:
		return usagef("--duration must be positive")
	case o.rate <= 0 || o.rate > 10000:
		return usagef("--rate must be in (0, 10000]")
	case o.seed == 0:
		return usagef("--seed must not be 0 (0 would mean a random seed, and the demo is meant to be repeatable)")
	}
	var err error
	if o.faults, err = parseFaults(faultSpec); err != nil {
		return err
	}
	return demo(ctx, o, stdout, stderr)
}

// demoRun holds the moving parts of one demo so that shutdown can tear them down in order.
type demoRun struct {
	o       demoOptions
	p       *printer
	srv     *sim.Server
	proxy   *faultproxy.Proxy
	gate    *gate
	r       *rewatch.Reflector
	store   *driver.MemStore
	writer  *writer
	rng     *rand.Rand
	expired int // 410s the server actually answered

	// What the injector needs to know about the stream, fed by observe on the reflector's
	// goroutine: Stats has no notion of "a watch is open and delivering".
	mu         sync.Mutex
	healthy    bool // Watching, the stream open and at least one frame received on it
	failures   int  // transitions caused by a failure (a Status, a transport error)
	streamEnds int  // streams that ended cleanly
}

func (d *demoRun) observe(t driver.Transition) {
	d.mu.Lock()
	s := t.Snapshot
	d.healthy = s.State == fsm.Watching && s.Watch.Open && s.Watch.Events > 0
	if t.Cause != fsm.NoCause && t.Event.Failure != nil {
		d.failures++
	}
	if (t.Cause == fsm.CauseStreamEnded || t.Cause == fsm.CauseStreamEndedQuickly) && t.Event.Failure == nil {
		d.streamEnds++
	}
	d.mu.Unlock()
	d.p.transition(t)
}

func (d *demoRun) counts() (healthy bool, failures, streamEnds int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.healthy, d.failures, d.streamEnds
}

func (d *demoRun) isHealthy() bool { h, _, _ := d.counts(); return h }

func demo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) (err error) {
	d := &demoRun{o: o, p: newPrinter(stdout, o.output), rng: rand.New(rand.NewPCG(o.seed, 0x64656d6f))}

	d.srv = sim.New(sim.Options{})
	defer d.srv.Close()
	simURL, err := d.srv.Start()
	if err != nil {
		return err
	}
	d.writer = newWriter(d.srv, o.seed, o.objects)
	if err := d.writer.populate(); err != nil {
		return err
	}
	// Own transports, closed at the end: idle keep-alive connections would outlive the demo.
	upstream := &http.Transport{}
	defer upstream.CloseIdleConnections()
	d.gate = &gate{next: upstream}
	defer d.gate.release() // before the proxy closes: a held request would block its handler
	if d.proxy, err = faultproxy.New(faultproxy.Config{Upstream: simURL, Transport: d.gate}); err != nil {
		return err
	}
	defer d.proxy.Close()
	clientTransport := &http.Transport{}
	defer clientTransport.CloseIdleConnections()

	var journalFile *os.File
	if o.journalPath != "" {
		if journalFile, err = os.Create(o.journalPath); err != nil {
			return usagef("journal: %v", err)
		}
		defer journalFile.Close()
	}
	cfg := rewatch.Config{
		Connection: rewatch.Connection{
			Client: &http.Client{Transport: clientTransport}, Server: d.proxy.URL(),
			Resource: rewatch.Resource{Version: sim.ConfigMaps.Version, Resource: sim.ConfigMaps.Resource},
		},
		Policy:       rewatch.Policy{Seed: o.seed},
		OnTransition: d.observe,
		// The reflector's log lines go to stderr through the printer, which erases the status
		// line before each and redraws it after, so that none is written over it.
		Logger: slog.New(slog.NewTextHandler(d.p.writerTo(stderr), nil)),
	}
	o.tun.apply(&cfg)
	d.store = driver.NewMemStore()
	cfg.Store = d.store
	if journalFile != nil {
		cfg.Journal = journalFile
	}
	if d.r, err = rewatch.New(cfg); err != nil {
		return err
	}

	plan := schedule(o.faults, d.rng)
	d.p.note("start", fmt.Sprintf("demo: simulated API server %s, fault proxy %s, %d configmaps, seed %d", simURL, d.proxy.URL(), o.objects, o.seed),
		map[string]any{"server": simURL, "proxy": d.proxy.URL(), "objects": o.objects, "seed": o.seed})
	d.p.note("plan", "demo: faults in order: "+planText(plan), map[string]any{"faults": planStrings(plan)})

	runCtx, stopReflector := context.WithCancel(context.Background())
	defer stopReflector()
	runDone := make(chan error, 1)
	go func() { runDone <- d.r.Run(runCtx) }()
	var stopStatus func()
	if o.output == "text" && isTerminal(stdout) {
		stopStatus = startStatus(ctx, d.p, d.r.Stats)
	}
	stopAll := func() error {
		stopReflector()
		runErr := <-runDone
		if stopStatus != nil {
			stopStatus()
		}
		return runErr
	}

	checks, err := d.drive(ctx, plan, runDone)
	runErr := stopAll()
	st := d.r.Stats()
	d.p.summary(st)
	d.p.note("writer", fmt.Sprintf("  writer           %d creates, %d updates, %d deletes", d.writer.created, d.writer.updated, d.writer.deleted),
		map[string]any{"creates": d.writer.created, "updates": d.writer.updated, "deletes": d.writer.deleted})
	if ctx.Err() != nil {
		return errors.New("interrupted; the checks were skipped")
	}
	if err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("reflector: %w", runErr)
	}
	return d.verify(st, checks)
}

// drive runs the writer and the fault plan, then stops the writer and waits for the cache to
// converge. It returns the convergence result for verify.
func (d *demoRun) drive(ctx context.Context, plan []faultKind, runDone <-chan error) (converged bool, err error) {
	if err := d.waitUntil(ctx, runDone, "initial sync", func() bool { return d.r.Stats().State == fsm.Watching }); err != nil {
		return false, err
	}
	writeCtx, stopWriter := context.WithCancel(ctx)
	writeDone := make(chan error, 1)
	go func() { writeDone <- d.writer.run(writeCtx, d.o.rate) }()
	defer func() {
		stopWriter()
		if werr := <-writeDone; werr != nil && err == nil {
			err = fmt.Errorf("writer: %w", werr)
		}
	}()

	deadline := time.Now().Add(d.o.duration)
	// Spread the faults over most of the run and leave the rest quiet, to show steady state.
	gap := time.Duration(float64(d.o.duration) * 0.8 / float64(len(plan)+1))
	for i, k := range plan {
		if err := sleepCtx(ctx, gap); err != nil {
			return false, err
		}
		if err := d.waitUntil(ctx, runDone, "a healthy watch before the next fault", d.isHealthy); err != nil {
			return false, err
		}
		if err := d.inject(ctx, runDone, i+1, len(plan), k); err != nil {
			return false, err
		}
	}
	if err := sleepCtx(ctx, time.Until(deadline)); err != nil {
		return false, err
	}
	stopWriter()
	if werr := <-writeDone; werr != nil {
		return false, fmt.Errorf("writer: %w", werr)
	}
	writeDone <- nil // the deferred receive must not block
	d.p.note("writer-stopped", fmt.Sprintf("demo: writer stopped at rv=%s; waiting for the cache to converge", d.srv.CurrentRV()), nil)
	start := time.Now()
	for !d.matches() {
		if time.Since(start) > demoConvergeTimeout {
			return false, nil
		}
		if err := sleepCtx(ctx, demoPoll); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (d *demoRun) matches() bool {
	return maps2equal(d.store.Versions(), d.srv.Snapshot(sim.ConfigMaps))
}

func (d *demoRun) inject(ctx context.Context, runDone <-chan error, n, total int, k faultKind) error {
	afterEvents := 1 + d.rng.IntN(3)
	d.p.note("fault", fmt.Sprintf("── fault %d/%d %s: %s", n, total, k, describeFault(k, afterEvents)),
		map[string]any{"fault": string(k), "n": n, "of": total})
	var f faultproxy.Fault
	switch k {
	case fault429Start:
		f = faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")
	case fault429Event:
		f = faultproxy.WatchError(faultproxy.TooManyRequests(1)).AfterEvents(afterEvents)
	case faultInternal:
		f = faultproxy.WatchError(faultproxy.InternalError()).AfterEvents(afterEvents)
	case faultReset:
		f = faultproxy.Reset().AfterEvents(afterEvents)
	case faultDrop:
		_, _, ends := d.counts()
		d.srv.DropWatches()
		return d.waitUntil(ctx, runDone, "the stream to end", func() bool { _, _, e := d.counts(); return e > ends })
	case fault410:
		return d.inject410(ctx, runDone)
	}
	_, failures, _ := d.counts()
	d.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: f})
	// Rules apply to requests from now on; ending the stream makes the reflector open one.
	d.srv.DropWatches()
	return d.waitUntil(ctx, runDone, string(k)+" to reach the reflector", func() bool { _, f, _ := d.counts(); return f > failures })
}

// inject410 produces the 410 as a real cluster does: the client's resourceVersion is compacted
// away while it is not watching, and the server refuses to resume from it.
func (d *demoRun) inject410(ctx context.Context, runDone <-chan error) error {
	before := d.expiredSeen()
	d.gate.hold()
	d.srv.DropWatches()
	if err := d.waitUntil(ctx, runDone, "the re-watch to arrive", func() bool { return d.gate.waiting() > 0 }); err != nil {
		d.gate.release()
		return err
	}
	// A write the reflector cannot have seen, then compaction past it: the held re-watch's
	// resourceVersion is now older than anything the server keeps.
	if _, err := d.srv.Create(sim.ConfigMaps, demoNamespace, fmt.Sprintf("compacted-%d", d.expired), map[string]string{"v": "0"}); err != nil {
		d.gate.release()
		return err
	}
	d.srv.Compact()
	d.gate.release()
	if err := d.waitUntil(ctx, runDone, "the server's 410", func() bool { return d.expiredSeen() > before }); err != nil {
		return err
	}
	d.expired++
	return nil
}

func (d *demoRun) expiredSeen() int {
	st := d.r.Stats()
	return st.Retries[fsm.CauseExpired] + st.Retries[fsm.CauseExpiredAgain]
}

// waitUntil polls cond; it fails if the reflector stopped or the bound passed.
func (d *demoRun) waitUntil(ctx context.Context, runDone <-chan error, what string, cond func() bool) error {
	start := time.Now()
	for !cond() {
		select {
		case err := <-runDone:
			return fmt.Errorf("reflector stopped while waiting for %s: %v", what, err)
		case <-ctx.Done():
			return fmt.Errorf("interrupted while waiting for %s", what)
		case <-time.After(demoPoll):
		}
		if time.Since(start) > demoStepTimeout {
			return fmt.Errorf("timed out after %s waiting for %s", demoStepTimeout, what)
		}
	}
	return nil
}

// verify prints and enforces the two promises of the demo: the cache equals the server, and
// transient failures cost no LIST.
func (d *demoRun) verify(st rewatch.Stats, converged bool) error {
	var failed []string
	want := d.srv.Snapshot(sim.ConfigMaps)
	if converged {
		d.p.note("check", fmt.Sprintf("cache matches server (%d objects)", len(want)),
			map[string]any{"check": "cache", "ok": true, "objects": len(want)})
	} else {
		diff := diffVersions(d.store.Versions(), want)
		d.p.note("check", fmt.Sprintf("cache DIFFERS from server after %s:\n%s", demoConvergeTimeout, strings.Join(diff, "\n")),
			map[string]any{"check": "cache", "ok": false, "diff": diff})
		failed = append(failed, "cache differs from server")
	}

	pastWindow := st.Retries[fsm.CauseInternalErrorPastWindow]
	expected := 1 + d.expired + pastWindow
	formula := fmt.Sprintf("1 + 410s injected = 1 + %d = %d", d.expired, expected)
	if pastWindow > 0 {
		formula = fmt.Sprintf("1 + 410s injected + InternalErrors past the window = 1 + %d + %d = %d", d.expired, pastWindow, expected)
	}
	ok := st.Lists == expected
	mark := "ok"
	if !ok {
		mark = "MISMATCH"
		failed = append(failed, fmt.Sprintf("%d LISTs, expected %d", st.Lists, expected))
	}
	d.p.note("check", fmt.Sprintf("LISTs: %d (expected %s) %s", st.Lists, formula, mark),
		map[string]any{"check": "lists", "ok": ok, "lists": st.Lists, "expected": expected, "expired": d.expired})

	// The proxy saw every request on the wire: its count must agree with the reflector's own.
	proxyLists, proxyWatches := d.proxy.Counts()
	wireOK := proxyLists == st.ListPages
	d.p.note("check", fmt.Sprintf("on the wire: %d LIST requests, %d WATCH requests (reflector counted %d and %d)",
		proxyLists, proxyWatches, st.ListPages, st.Watches),
		map[string]any{"check": "wire", "ok": wireOK, "listRequests": proxyLists, "watchRequests": proxyWatches})
	if !wireOK {
		failed = append(failed, "proxy and reflector disagree on LIST requests")
	}
	if len(failed) > 0 {
		return errors.New("demo failed: " + strings.Join(failed, "; "))
	}
	return nil
}

func diffVersions(got, want map[string]string) []string {
	var out []string
	for k, v := range want {
		switch g, ok := got[k]; {
		case !ok:
			out = append(out, fmt.Sprintf("  missing from cache: %s (rv %s)", k, v))
		case g != v:
			out = append(out, fmt.Sprintf("  stale in cache:     %s (cache rv %s, server rv %s)", k, g, v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("  not on server:      %s (cache rv %s)", k, v))
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("  … and %d more", len(out)-20))
	}
	return out
}

func maps2equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func planText(plan []faultKind) string {
	if len(plan) == 0 {
		return "none"
	}
	return strings.Join(planStrings(plan), ", ")
}

func planStrings(plan []faultKind) []string {
	out := make([]string, len(plan))
	for i, k := range plan {
		out[i] = string(k)
	}
	return out
}

// sleepCtx waits d unless ctx ends first; demo pacing is real time by nature.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

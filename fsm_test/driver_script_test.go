package fsm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// TestDriverTranscripts plays the driver's contract (docs/design.md, "driver/"): what it does
// with each command the machine gives. Each script runs driver.Run over a scripted transport,
// a mock clock and a recording store, and shows, for each directive, in the order they
// happened:
//
//	store: …       a call on the store (Replace, Add, Update, Delete; with an incremental
//	               store BeginReplace, Put, Finish, Abandon)
//	clock: …       a timer armed, stopped before it fired, or fired by a tick
//	observer: …    the transition as an observer hears of it — after its commands ran
//	transport: …   a request the transport was asked to perform, or one the driver aborted
//
// Directives:
//
//	run [config keys]        start the reflector (keys as in the transcripts' config);
//	                         store=incremental gives it a driver.IncrementalStore; with
//	                         persistence: snapshot=RV snapshot-keys=ns/a,ns/b is the snapshot
//	                         it loads, snapshot-refused=REASON a load that fails, save-period=D
//	                         (or persist, for saves at stop only) saves the store
//	save-blocks              the next save waits until release-save (or the stop)
//	save-fails               the next save fails
//	release-save             the save that waits returns
//	server <event>           the transport answers the request in flight with an event
//	                         written as the transcripts write them (list-page, watch-opened,
//	                         watch-event, watch-error, watch-open-failed, watch-ended, list-failed);
//	                         keys=ns/a,ns/b gives a list page its objects
//	tick <duration>          advance the mock clock
//	store-fails              the store refuses its next call
//	stop                     cancel Run's context and wait for it to return
//
// With persistence, the driver's logs about it are shown too ("log: …"), as the driver writes
// them on its loop; a save's objects are listed when the driver hears that it succeeded.
func TestDriverTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/driver", func(t *testing.T, path string) {
		var h *driverHarness
		defer func() {
			if h != nil {
				h.close()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "run" && h == nil {
				d.Fatalf(t, "%s before run", d.Cmd)
			}
			var err error
			switch d.Cmd {
			case "run":
				incremental := false
				var ps persistScript
				args := d.CmdArgs[:0:0]
				for _, a := range d.CmdArgs {
					v := ""
					if len(a.Vals) > 0 {
						v = a.Vals[0]
					}
					switch a.Key {
					case "store":
						incremental = v == "incremental"
					case "snapshot":
						ps.on, ps.rv = true, v
					case "snapshot-keys":
						ps.keys = strings.Split(v, ",")
					case "snapshot-refused":
						ps.on, ps.refused = true, strings.Trim(v, `"`)
					case "persist":
						ps.on = true
					case "save-period":
						ps.on = true
						var perr error
						if ps.period, perr = time.ParseDuration(v); perr != nil {
							d.Fatalf(t, "%v", perr)
						}
					default:
						args = append(args, a)
					}
				}
				cfg, perr := parseConfig(args)
				if perr != nil {
					d.Fatalf(t, "%v", perr)
				}
				h = startDriver(t, driver.Config{Policy: cfg}, incremental, ps)
			case "server":
				words := make([]string, len(d.CmdArgs))
				for i, a := range d.CmdArgs {
					words[i] = a.String()
				}
				err = h.answer(strings.Join(words, " "))
			case "tick":
				var step time.Duration
				if len(d.CmdArgs) != 1 {
					d.Fatalf(t, "tick <duration>")
				}
				if step, err = time.ParseDuration(d.CmdArgs[0].Key); err == nil {
					err = h.tick(step)
				}
			case "store-fails":
				h.store.failNext()
				return "ok\n"
			case "save-blocks", "save-fails":
				h.mu.Lock()
				if d.Cmd == "save-blocks" {
					h.holdNext, h.held = true, h.held+1
				} else {
					h.failNext = true
				}
				h.mu.Unlock()
				return "ok\n"
			case "release-save":
				h.mu.Lock()
				close(h.release)
				h.release, h.held = make(chan struct{}), h.held-1
				h.mu.Unlock()
				err = h.settle()
			case "stop":
				err = h.stop()
			default:
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return h.flush()
		})
	})
}

// driverHarness runs one driver. Lines are appended from the driver's goroutine (store, clock,
// observer) and from the test's (transport, ticks), always in the order they happened: the
// harness waits for the driver to be done with each directive before it looks at the
// transport.
type driverHarness struct {
	t      *testing.T
	clock  *loggingClock
	tr     *scriptedTransport
	store  *loggingStore
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	changed  chan struct{}
	lines    []string
	observed int
	last     fsm.Snapshot
	lastErr  error
	// requests are the requests the driver was told to start, by id, not yet shown received.
	requests []uint64

	// Persistence: the period of the save timer (the one timer armed for it: transcripts
	// give it a period no timer of the machine's has), how many saves the driver began and
	// ended (as it logs them), how many are held (save-blocks), and what the last save held.
	savePeriod         time.Duration
	saveArms           int
	saveTimers         []*loggingTimer
	started, finished  int
	held               int
	holdNext, failNext bool
	release            chan struct{}
	savedKeys          []string
}

// persistScript is the persistence a driver transcript runs with.
type persistScript struct {
	on      bool
	rv      string
	keys    []string
	refused string
	period  time.Duration
}

const driverWait = 10 * time.Second // real time; only a broken driver waits this long

func startDriver(t *testing.T, cfg driver.Config, incremental bool, ps persistScript) *driverHarness {
	h := &driverHarness{t: t, changed: make(chan struct{}), done: make(chan error, 1), release: make(chan struct{})}
	h.clock = &loggingClock{Mock: clockx.NewMock(t0), h: h}
	h.tr = newScriptedTransport()
	h.store = &loggingStore{m: driver.NewMemStore(), h: h}
	cfg.Transport, cfg.Clock, cfg.Store = h.tr, h.clock, h.store
	if incremental {
		cfg.Store = incrementalLoggingStore{h.store}
	}
	cfg.Checked = true
	cfg.Logger = slog.New(slog.DiscardHandler)
	if ps.on {
		h.savePeriod = ps.period
		cfg.Persistence = &driver.Persistence{Save: h.save, Period: ps.period,
			Load: func(context.Context) (string, []any, error) {
				if ps.refused != "" {
					return "", nil, errors.New(ps.refused)
				}
				items := []any{}
				for _, k := range ps.keys {
					items = append(items, object(k, ps.rv))
				}
				return ps.rv, items, nil
			}}
		cfg.Logger = slog.New(persistLog{h})
	}
	cfg.Observers = []driver.Observer{driver.ObserverFunc(h.observe)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- driver.Run(ctx, cfg) }()
	if err := h.await(0, 1); err != nil {
		t.Fatal(err)
	}
	if err := h.settle(); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *driverHarness) logf(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf(format, args...))
}

func (h *driverHarness) observe(tr driver.Transition) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := fmt.Sprintf("observer: %s → ", tr.Event)
	if tr.Cause == fsm.NoCause {
		line += "ignored"
	} else {
		line += fmt.Sprintf("%s --%s--> %s", tr.From, tr.Cause, tr.Snapshot)
	}
	if tr.Err != nil {
		line += fmt.Sprintf(" (command failed: %v)", tr.Err)
	}
	h.lines = append(h.lines, line)
	for _, c := range tr.Commands {
		if (c.Kind == fsm.CmdListPage || c.Kind == fsm.CmdOpenWatch) && tr.Err == nil {
			h.requests = append(h.requests, c.Request)
		}
	}
	h.observed++
	h.last, h.lastErr = tr.Snapshot, tr.Err
	close(h.changed)
	h.changed = make(chan struct{})
}

// seen is how many transitions the observers have heard of.
func (h *driverHarness) seen() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.observed
}

// await waits until the observers have heard of n transitions after the first since.
func (h *driverHarness) await(since, n int) error {
	want := since + n
	deadline := time.After(driverWait)
	for {
		h.mu.Lock()
		got, changed := h.observed, h.changed
		h.mu.Unlock()
		if got >= want {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("the driver took %d transitions, want %d", got-since, n)
		}
	}
}

// save is the Persistence's Save: it keeps the keys saved, for the driver's log of its end,
// and waits or fails as the script said.
func (h *driverHarness) save(ctx context.Context, _ string, items []any) error {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i], _ = driver.KeyOf(it)
	}
	slices.Sort(keys)
	h.mu.Lock()
	hold, fail, release := h.holdNext, h.failNext, h.release
	h.holdNext, h.failNext = false, false
	h.savedKeys = keys
	h.mu.Unlock()
	if hold {
		select {
		case <-release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if fail {
		return errors.New("disk full")
	}
	return nil
}

// persistLog shows the driver's logs about persistence, as it writes them on its loop, and
// counts the saves it begins and ends.
type persistLog struct{ h *driverHarness }

func (l persistLog) Enabled(context.Context, slog.Level) bool { return true }
func (l persistLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l persistLog) WithGroup(string) slog.Handler            { return l }

func (l persistLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "persist") {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "log: %s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "resource" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.Message == "persisting the store":
		h.started++
	case r.Message == "store persisted", r.Message == "persisting the store works again":
		fmt.Fprintf(&b, " [%s]", strings.Join(h.savedKeys, " "))
		h.finished++
	case strings.HasPrefix(r.Message, "persisting the store failed"), r.Message == "persisting the store abandoned at stop":
		h.finished++
	}
	h.lines = append(h.lines, b.String())
	close(h.changed)
	h.changed = make(chan struct{})
	return nil
}

// awaitSaves waits until every save the driver began has ended, but those the script holds.
func (h *driverHarness) awaitSaves() error {
	deadline := time.After(driverWait)
	for {
		h.mu.Lock()
		done, changed := h.finished >= h.started-h.held, h.changed
		h.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("the driver's saves did not end")
		}
	}
}

// settle shows the requests the driver started as the transport receives them, and the ones
// it aborted as the transport sees their context end, and waits for the saves it began.
func (h *driverHarness) settle() error {
	if err := h.awaitSaves(); err != nil {
		return err
	}
	h.mu.Lock()
	started := h.requests
	h.requests = nil
	current := h.last.Request
	h.mu.Unlock()
	// The driver aborts a request before it starts the next (a cancel-request comes first, and
	// starting a request aborts the one before), so aborts are shown first.
	for _, id := range h.tr.active() {
		if id == current || slices.Contains(started, id) {
			continue
		}
		if err := h.tr.aborted(id); err != nil {
			return err
		}
		h.logf("transport: request %d aborted (its context ended)", id)
	}
	for _, id := range started {
		c, err := h.tr.received(id)
		if err != nil {
			return err
		}
		h.logf("transport: %s", c)
	}
	return nil
}

func (h *driverHarness) answer(line string) error {
	e, err := parseServerEvent(line)
	if err != nil {
		return err
	}
	since := h.seen()
	if err := h.tr.answer(e); err != nil {
		return err
	}
	if err := h.await(since, 1); err != nil {
		return err
	}
	h.mu.Lock()
	failed := h.lastErr != nil
	h.mu.Unlock()
	if failed {
		// A command failed: the driver stops the machine at once, a transition of its own.
		if err := h.await(since+1, 1); err != nil {
			return err
		}
	}
	return h.settle()
}

func (h *driverHarness) tick(d time.Duration) error {
	due := 0
	for _, left := range h.clock.ArmedDurations() {
		if left <= d {
			due++
		}
	}
	// The save timer fires no transition: the driver arms it again once it has saved or
	// skipped the save.
	end := h.clock.Now().Add(d)
	h.mu.Lock()
	saves, arms := 0, h.saveArms
	for _, t := range h.saveTimers {
		if !t.stopped && !t.due.After(end) {
			saves++
		}
	}
	h.saveTimers = slices.DeleteFunc(h.saveTimers, func(t *loggingTimer) bool { return t.stopped || !t.due.After(end) })
	h.mu.Unlock()
	since := h.seen()
	// Logged before the clock moves: the timer it fires is handled at once.
	h.logf("clock: +%v, now t+%v; %d timer(s) fire", d, end.Sub(t0), due)
	h.clock.Add(d)
	if err := h.await(since, due-saves); err != nil {
		return err
	}
	if err := h.awaitSaveArms(arms + saves); err != nil {
		return err
	}
	return h.settle()
}

// awaitSaveArms waits until the save timer has been armed n times.
func (h *driverHarness) awaitSaveArms(n int) error {
	deadline := time.After(driverWait)
	for {
		h.mu.Lock()
		got, changed := h.saveArms, h.changed
		h.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fmt.Errorf("the save timer was armed %d times, want %d", got, n)
		}
	}
}

func (h *driverHarness) stop() error {
	h.cancel()
	var err error
	select {
	case err = <-h.done:
	case <-time.After(driverWait):
		return fmt.Errorf("Run did not return after its context ended")
	}
	h.done = nil
	if serr := h.settle(); serr != nil {
		return serr
	}
	h.logf("Run returned %v", err)
	return nil
}

func (h *driverHarness) close() {
	if h.done != nil {
		h.cancel()
		<-h.done
	}
}

func (h *driverHarness) flush() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := strings.Join(h.lines, "\n") + "\n"
	h.lines = nil
	return out
}

// parseServerEvent reads an event as the transcripts write them, with objects for its keys:
// a list page's keys=ns/a,ns/b, a watch event's key.
func parseServerEvent(line string) (fsm.Event, error) {
	var keys []string
	var fields []string
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "keys="); ok {
			keys = strings.Split(v, ",")
			continue
		}
		fields = append(fields, f)
	}
	r := newScriptRunner(transcriptMachine())
	e, err := r.parse(strings.Join(fields, " "))
	if err != nil {
		return e, err
	}
	rv := e.ResourceVersion
	for _, k := range keys {
		e.Items = append(e.Items, object(k, rv))
	}
	if len(keys) > 0 {
		e.ItemCount = len(keys)
	}
	if e.Key != "" && e.Type != fsm.Bookmark {
		e.Object = object(e.Key, rv)
	}
	e.Now, e.Request = time.Time{}, 0
	return e, nil
}

func object(key, rv string) *metav1.PartialObjectMetadata {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = "", key
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
}

// scriptedTransport is a driver.Transport whose answers the script gives: each call waits
// until the script answers it or its context ends.
type scriptedTransport struct {
	mu      sync.Mutex
	changed chan struct{}
	calls   map[uint64]*scriptedCall
}

type scriptedCall struct {
	cmd     fsm.Command
	answers chan fsm.Event
	// open: the call has not returned, nor taken an answer that ends it.
	open bool
	// ended is closed when the call returned because its context ended.
	ended chan struct{}
}

func newScriptedTransport() *scriptedTransport {
	return &scriptedTransport{changed: make(chan struct{}), calls: map[uint64]*scriptedCall{}}
}

func (s *scriptedTransport) String() string { return "scripted" }

func (s *scriptedTransport) begin(c fsm.Command) *scriptedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := &scriptedCall{cmd: c, answers: make(chan fsm.Event, 16), open: true, ended: make(chan struct{})}
	s.calls[c.Request] = call
	close(s.changed)
	s.changed = make(chan struct{})
	return call
}

func (s *scriptedTransport) List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	s.serve(ctx, c, emit)
}

func (s *scriptedTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	s.serve(ctx, c, emit)
}

// endsCall says whether answer e is the last of a call for c: anything but an item ends a
// LIST, a stream end or a failed open ends a watch.
func endsCall(c fsm.Command, e fsm.Event) bool {
	if c.Kind == fsm.CmdListPage {
		return e.Kind != fsm.EvListItem
	}
	return e.Kind == fsm.EvWatchEnded || e.Kind == fsm.EvWatchOpenFailed
}

// serve begins the call c and emits the answers the script gives it until one ends it. When
// emit refuses an answer or ctx ends first, it closes the call's ended instead.
func (s *scriptedTransport) serve(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	call := s.begin(c)
	for {
		select {
		case e := <-call.answers:
			if !emit(e) {
				close(call.ended)
				return
			}
			if endsCall(c, e) {
				return
			}
		case <-ctx.Done():
			close(call.ended)
			return
		}
	}
}

// answer hands e to the call in flight that the script can still answer.
func (s *scriptedTransport) answer(e fsm.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.openIDs()
	if len(ids) != 1 {
		return fmt.Errorf("%d requests in flight, want one to answer", len(ids))
	}
	call := s.calls[ids[0]]
	e.Request = call.cmd.Request
	switch {
	case call.cmd.Kind == fsm.CmdListPage && e.Kind != fsm.EvListPage && e.Kind != fsm.EvListFailed && e.Kind != fsm.EvListItem:
		return fmt.Errorf("request %d is a LIST; it cannot be answered with %s", e.Request, e.Kind)
	case call.cmd.Kind == fsm.CmdOpenWatch && (e.Kind == fsm.EvListPage || e.Kind == fsm.EvListFailed || e.Kind == fsm.EvListItem):
		return fmt.Errorf("request %d is a watch; it cannot be answered with %s", e.Request, e.Kind)
	}
	if endsCall(call.cmd, e) {
		call.open = false
	}
	call.answers <- e
	return nil
}

// received waits for the call of request id to reach the transport.
func (s *scriptedTransport) received(id uint64) (fsm.Command, error) {
	deadline := time.After(driverWait)
	for {
		s.mu.Lock()
		call, changed := s.calls[id], s.changed
		s.mu.Unlock()
		if call != nil {
			return call.cmd, nil
		}
		select {
		case <-changed:
		case <-deadline:
			return fsm.Command{}, fmt.Errorf("request %d never reached the transport", id)
		}
	}
}

// active lists the calls the script could still answer, by id.
func (s *scriptedTransport) active() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.openIDs()
}

// openIDs lists the calls the script could still answer, by id; the caller holds s.mu.
func (s *scriptedTransport) openIDs() []uint64 {
	var ids []uint64
	for id, c := range s.calls {
		if c.open {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// aborted waits for the call of request id to see its context end.
func (s *scriptedTransport) aborted(id uint64) error {
	s.mu.Lock()
	call := s.calls[id]
	s.mu.Unlock()
	select {
	case <-call.ended:
	case <-time.After(driverWait):
		return fmt.Errorf("request %d was not aborted", id)
	}
	s.mu.Lock()
	call.open = false
	s.mu.Unlock()
	return nil
}

// loggingClock is the mock clock, telling the harness of every timer armed and stopped.
type loggingClock struct {
	*clockx.Mock
	h *driverHarness
}

func (c *loggingClock) NewTimer(d time.Duration) clockx.Timer {
	due := c.Now().Add(d)
	t := &loggingTimer{Timer: c.Mock.NewTimer(d), h: c.h, d: d, due: due}
	h := c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lines = append(h.lines, fmt.Sprintf("clock: timer armed for %v (due t+%v)", d, due.Sub(t0)))
	if h.savePeriod > 0 && d == h.savePeriod {
		h.saveArms++
		h.saveTimers = append(h.saveTimers, t)
		close(h.changed)
		h.changed = make(chan struct{})
	}
	return t
}

type loggingTimer struct {
	clockx.Timer
	h       *driverHarness
	d       time.Duration
	due     time.Time
	stopped bool
}

func (t *loggingTimer) Stop() bool {
	stopped := t.Timer.Stop()
	if stopped {
		t.h.mu.Lock()
		t.stopped = true
		t.h.mu.Unlock()
		t.h.logf("clock: timer of %v stopped before it fired", t.d)
	}
	return stopped
}

// loggingStore is a MemStore, seen through the Store interface only (as a client-go store is),
// that tells the harness of every call and can refuse one.
type loggingStore struct {
	m    *driver.MemStore
	h    *driverHarness
	mu   sync.Mutex
	fail bool
}

func (s *loggingStore) failNext() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = true
}

func (s *loggingStore) refuse(call string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		s.fail = false
		s.h.logf("store: %s → refused", call)
		return fmt.Errorf("store refused %s", call)
	}
	s.h.logf("store: %s", call)
	return nil
}

func (s *loggingStore) Replace(items []any, rv string) error {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i], _ = driver.KeyOf(it)
	}
	if err := s.refuse(fmt.Sprintf("Replace at rv %q with [%s]", rv, strings.Join(keys, " "))); err != nil {
		return err
	}
	return s.m.Replace(items, rv)
}

// List is the store's objects, unlogged: what a save takes.
func (s *loggingStore) List() []any { return s.m.List() }

func (s *loggingStore) Add(obj any) error    { return s.call("Add", obj, s.m.Add) }
func (s *loggingStore) Update(obj any) error { return s.call("Update", obj, s.m.Update) }
func (s *loggingStore) Delete(obj any) error { return s.call("Delete", obj, s.m.Delete) }

// incrementalLoggingStore is the same MemStore as a driver.IncrementalStore.
type incrementalLoggingStore struct{ *loggingStore }

func (s incrementalLoggingStore) BeginReplace() (driver.Replacement, error) {
	if err := s.refuse("BeginReplace"); err != nil {
		return nil, err
	}
	r, err := s.m.BeginReplace()
	return loggingReplacement{r, s.loggingStore}, err
}

type loggingReplacement struct {
	r driver.Replacement
	s *loggingStore
}

func (r loggingReplacement) Put(obj any) error { return r.s.call("Put", obj, r.r.Put) }
func (r loggingReplacement) Finish(rv string) error {
	if err := r.s.refuse(fmt.Sprintf("Finish at rv %q", rv)); err != nil {
		return err
	}
	if err := r.r.Finish(rv); err != nil {
		return err
	}
	keys := r.s.m.ListKeys()
	slices.Sort(keys)
	r.s.h.logf("store: holds [%s]", strings.Join(keys, " "))
	return nil
}

func (r loggingReplacement) Drop(key string) error {
	if err := r.s.refuse("Drop " + key); err != nil {
		return err
	}
	return r.r.(driver.Dropper).Drop(key)
}

func (r loggingReplacement) Abandon() {
	r.s.h.logf("store: Abandon")
	r.r.Abandon()
}

func (s *loggingStore) call(name string, obj any, do func(any) error) error {
	key, _ := driver.KeyOf(obj)
	if err := s.refuse(name + " " + key); err != nil {
		return err
	}
	return do(obj)
}

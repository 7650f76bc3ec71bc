package fsm_test

import (
	"context"
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
//	                         store=incremental gives it a driver.IncrementalStore
//	server <event>           the transport answers the request in flight with an event
//	                         written as the transcripts write them (list-page, watch-opened,
//	                         watch-event, watch-error, watch-open-failed, watch-ended, list-failed);
//	                         keys=ns/a,ns/b gives a list page its objects
//	tick <duration>          advance the mock clock
//	store-fails              the store refuses its next call
//	stop                     cancel Run's context and wait for it to return
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
				args := d.CmdArgs[:0:0]
				for _, a := range d.CmdArgs {
					if a.Key == "store" {
						incremental = len(a.Vals) == 1 && a.Vals[0] == "incremental"
						continue
					}
					args = append(args, a)
				}
				cfg, perr := parseConfig(args)
				if perr != nil {
					d.Fatalf(t, "%v", perr)
				}
				h = startDriver(t, driver.Config{Policy: cfg}, incremental)
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
}

const driverWait = 10 * time.Second // real time; only a broken driver waits this long

func startDriver(t *testing.T, cfg driver.Config, incremental bool) *driverHarness {
	h := &driverHarness{t: t, changed: make(chan struct{}), done: make(chan error, 1)}
	h.clock = &loggingClock{Mock: clockx.NewMock(t0), h: h}
	h.tr = newScriptedTransport()
	h.store = &loggingStore{m: driver.NewMemStore(), h: h}
	cfg.Transport, cfg.Clock, cfg.Store = h.tr, h.clock, h.store
	if incremental {
		cfg.Store = incrementalLoggingStore{h.store}
	}
	cfg.Checked = true
	cfg.Logger = slog.New(slog.DiscardHandler)
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

// settle shows the requests the driver started as the transport receives them, and the ones
// it aborted as the transport sees their context end.
func (h *driverHarness) settle() error {
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
	since := h.seen()
	// Logged before the clock moves: the timer it fires is handled at once.
	h.logf("clock: +%v, now t+%v; %d timer(s) fire", d, h.clock.Now().Add(d).Sub(t0), due)
	h.clock.Add(d)
	if err := h.await(since, due); err != nil {
		return err
	}
	return h.settle()
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
	c.h.logf("clock: timer armed for %v (due t+%v)", d, c.Now().Add(d).Sub(t0))
	return &loggingTimer{Timer: c.Mock.NewTimer(d), h: c.h, d: d}
}

type loggingTimer struct {
	clockx.Timer
	h *driverHarness
	d time.Duration
}

func (t *loggingTimer) Stop() bool {
	stopped := t.Timer.Stop()
	if stopped {
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

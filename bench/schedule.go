package bench

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rewatch/rewatch/internal/faultproxy"
)

// FaultKind names the faults of the storm.
type FaultKind string

const (
	Open429    FaultKind = "429-open"    // 429 answering the watch request, no Retry-After
	Open429RA  FaultKind = "429-open-RA" // same, with Retry-After: 1
	Event429   FaultKind = "429-event"   // 429 as a watch ERROR event after k events
	EventIE    FaultKind = "500-event"   // InternalError ERROR event after k events
	EventReset FaultKind = "reset"       // TCP reset after k events
	Event410   FaultKind = "410-event"   // 410 Expired ERROR event after k events
)

// Step is one fault of the schedule, applied to one plain (non watch-list) WATCH request.
type Step struct {
	Kind        FaultKind
	AfterEvents int
}

func (s Step) fault() faultproxy.Fault {
	switch s.Kind {
	case Open429:
		return faultproxy.Respond(faultproxy.TooManyRequests(0))
	case Open429RA:
		return faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")
	case Event429:
		return faultproxy.WatchError(faultproxy.TooManyRequests(0)).AfterEvents(s.AfterEvents)
	case EventIE:
		return faultproxy.WatchError(faultproxy.InternalError()).AfterEvents(s.AfterEvents)
	case EventReset:
		return faultproxy.Reset().AfterEvents(s.AfterEvents)
	case Event410:
		return faultproxy.WatchError(faultproxy.Expired()).AfterEvents(s.AfterEvents)
	}
	panic("unknown fault " + s.Kind)
}

// Mix is how many faults of each kind a storm has.
type Mix struct{ Open429, Event429, EventIE, EventReset, Event410 int }

// StormMix is the storm's full schedule: 62 faults of the kinds a busy apiserver and its
// network produce, two of them 410s.
var StormMix = Mix{Open429: 20, Event429: 20, EventIE: 10, EventReset: 10, Event410: 2}

// Schedule builds the seeded storm: the stream-ending faults shuffled, each ending a watch
// after 2–8 relayed events; Open429 of them preceded by a 429 at watch start (half of those
// with Retry-After: 1).
func Schedule(m Mix, seed uint64) []Step {
	r := rand.New(rand.NewPCG(seed, 6))
	var stream []Step
	add := func(k FaultKind, n int) {
		for range n {
			stream = append(stream, Step{Kind: k, AfterEvents: 2 + r.IntN(7)})
		}
	}
	add(Event429, m.Event429)
	add(EventIE, m.EventIE)
	add(EventReset, m.EventReset)
	add(Event410, m.Event410)
	r.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	pre := make([]bool, len(stream))
	for _, i := range r.Perm(len(stream))[:min(m.Open429, len(stream))] {
		pre[i] = true
	}
	pre[0] = false // the first watch opens before the storm starts: give it a stream fault
	var out []Step
	ra := 0
	for i, s := range stream {
		if pre[i] {
			k := Open429
			if ra%2 == 0 {
				k = Open429RA
			}
			ra++
			out = append(out, Step{Kind: k})
		}
		out = append(out, s)
	}
	return out
}

// Applied is one fault as it happened.
type Applied struct {
	Step
	// Start is when the faulted request arrived; End when the proxy finished it (the moment
	// the client's watch failed, for every fault kind).
	Start, End int64
}

// Front sits before a fault proxy and hands the schedule out one step per WATCH request
// (plain or watch-list). Requests from one reflector arrive one at a time, so the rule added
// just before ServeHTTP applies to exactly that request. The storm arms it before the
// reflector starts, and the schedule starts with a stream fault, which only fires once the
// writer produces events.
type Front struct {
	Proxy *faultproxy.Proxy
	// InitialEvents is the number of objects a watch-list stream sends before its bookmark.
	InitialEvents int

	mu      sync.Mutex
	steps   []Step
	armed   bool
	applied []Applied
	done    chan struct{}
}

// NewFront returns a front for p that will apply steps once Arm is called.
func NewFront(p *faultproxy.Proxy, steps []Step) *Front {
	return &Front{Proxy: p, steps: steps, done: make(chan struct{})}
}

// Arm starts handing out faults.
func (f *Front) Arm() { f.mu.Lock(); f.armed = true; f.mu.Unlock() }

// Done is closed when the last fault has been applied.
func (f *Front) Done() <-chan struct{} { return f.done }

// Applied returns the faults applied so far.
func (f *Front) Applied() []Applied {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Applied(nil), f.applied...)
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	isWatch := r.Method == http.MethodGet && (q.Get("watch") == "1" || strings.EqualFold(q.Get("watch"), "true"))
	idx := -1
	f.mu.Lock()
	f.Proxy.ClearRules()
	if isWatch && f.armed && len(f.applied) < len(f.steps) {
		idx = len(f.applied)
		st := f.steps[idx]
		f.applied = append(f.applied, Applied{Step: st, Start: time.Now().UnixNano()})
		if q.Get("sendInitialEvents") == "true" && st.AfterEvents > 0 {
			// A watch-list stream first relays the initial state (one ADDED per object and
			// the initial-events-end BOOKMARK); the fault hits the watch that follows.
			st.AfterEvents += f.InitialEvents + 1
		}
		f.Proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: st.fault()})
	}
	f.mu.Unlock()
	f.Proxy.ServeHTTP(w, r)
	if idx >= 0 {
		f.mu.Lock()
		f.applied[idx].End = time.Now().UnixNano()
		if idx == len(f.steps)-1 {
			close(f.done)
		}
		f.mu.Unlock()
	}
}

func (m Mix) String() string {
	return fmt.Sprintf("%d×429 at watch start (half Retry-After: 1), %d×429 ERROR, %d×InternalError ERROR, %d×reset, %d×410 ERROR",
		m.Open429, m.Event429, m.EventIE, m.EventReset, m.Event410)
}

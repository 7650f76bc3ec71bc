package soak

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/transitions"
)

// convergeBound is the stated bound: once a fault has cleared and the writers have paused,
// the store equals a fresh LIST of the server within this time.
const convergeBound = 30 * time.Second

var nsSeq atomic.Int64

// rig is one reflector in its own namespace: reflector → gate → fault proxy → backend.
type rig struct {
	t     *testing.T
	b     backend
	ns    string
	proxy *faultproxy.Proxy
	gate  *gate
	store *driver.MemStore
	r     *rewatch.Reflector

	mu        sync.Mutex
	lastRV    uint64
	rvBack    []string // resourceVersions that went backwards, described
	rvChecked int
	sent      []sent // LIST and WATCH requests the reflector issued
	causes    map[fsm.Cause]int
	// waitUntil is when the last backoff timer the reflector armed runs out.
	waitUntil time.Time

	cancel context.CancelFunc
	done   chan error
}

type sent struct {
	at   time.Time
	kind fsm.CommandKind
}

func newRig(t *testing.T, b backend, prefix string) *rig {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	require.NoError(t, b.EnsureNamespace(t.Context(), ns))
	p, err := faultproxy.New(faultproxy.Config{Upstream: b.URL(), Transport: b.Transport(), ForceJSON: true})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	g, err := newGate(strings.TrimPrefix(p.URL(), "http://"))
	require.NoError(t, err)
	t.Cleanup(g.Close)
	return &rig{t: t, b: b, ns: ns, proxy: p, gate: g, store: driver.NewMemStore(), causes: map[fsm.Cause]int{}}
}

func (r *rig) start(mod func(*rewatch.Config)) {
	r.t.Helper()
	cfg := rewatch.Config{
		Connection: rewatch.Connection{
			// The reflector's own client, as a user would build it: no timeout, and keep-alive.
			Client: &http.Client{Transport: &http.Transport{}}, Server: r.gate.URL(),
			Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: r.ns},
		},
		Store: r.store, Checked: true, OnTransition: r.observe,
	}
	if mod != nil {
		mod(&cfg)
	}
	rf, err := rewatch.New(cfg)
	require.NoError(r.t, err)
	r.r = rf
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func() { r.done <- rf.Run(ctx) }()
	r.t.Cleanup(r.stop)
}

func (r *rig) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		require.NoError(r.t, err)
	case <-time.After(30 * time.Second):
		r.t.Error("reflector did not stop within 30s")
	}
}

// observe checks that the resourceVersions reaching the store never go backwards and records
// every request the reflector issues. It runs on the reflector's goroutine.
func (r *rig) observe(t driver.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.Cause != fsm.CauseWatchEvent && t.Cause != fsm.NoCause {
		r.causes[t.Cause]++
	}
	for _, c := range t.Commands {
		switch c.Kind {
		case fsm.CmdArmTimer:
			r.waitUntil = t.Event.Now.Add(c.Delay)
		case fsm.CmdListPage, fsm.CmdOpenWatch:
			r.sent = append(r.sent, sent{at: t.Event.Now, kind: c.Kind})
		case fsm.CmdReplaceStore, fsm.CmdApply:
			rv, err := strconv.ParseUint(c.ResourceVersion, 10, 64)
			if err != nil {
				r.rvBack = append(r.rvBack, fmt.Sprintf("%s with unparsable RV %q", c.Kind, c.ResourceVersion))
				continue
			}
			r.rvChecked++
			if rv < r.lastRV {
				r.rvBack = append(r.rvBack, fmt.Sprintf("%s %s rv %d after %d (cause %s)", c.Kind, c.Key, rv, r.lastRV, t.Cause))
			}
			r.lastRV = max(r.lastRV, rv)
		}
	}
}

// sentBetween counts the LIST and WATCH requests issued in [from, to].
func (r *rig) sentBetween(from, to time.Time) (n int, at []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.sent {
		if !s.at.Before(from) && !s.at.After(to) {
			n++
			at = append(at, s.at.Sub(from).Round(10*time.Millisecond))
		}
	}
	return n, at
}

func (r *rig) causeCounts() map[fsm.Cause]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[fsm.Cause]int, len(r.causes))
	for k, v := range r.causes {
		out[k] = v
	}
	return out
}

// trimSent forgets requests older than before; a long soak must not grow the test's memory.
func (r *rig) trimSent(before time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.sent) && r.sent[i].at.Before(before) {
		i++
	}
	r.sent = append(r.sent[:0], r.sent[i:]...)
}

// converge waits until the store equals a fresh LIST (no lost, stale or phantom objects) and
// returns how long that took, or an error with the difference after bound.
func (r *rig) converge(bound time.Duration) (time.Duration, error) {
	start := time.Now()
	var want, got map[string]string
	var lerr error
	for time.Since(start) < bound {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		want, lerr = r.b.List(ctx, configMaps, r.ns)
		cancel()
		if lerr == nil {
			got = r.store.Versions()
			if maps.Equal(want, got) {
				return time.Since(start), nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("store never matched a fresh LIST within %s (list error %v)\n%s", bound, lerr, diff(want, got))
}

// backoffLeft is how much of the reflector's current backoff wait is left (0 if none).
func (r *rig) backoffLeft() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(time.Until(r.waitUntil), 0)
}

func diff(server, store map[string]string) string {
	var b strings.Builder
	for k, v := range server {
		if w, ok := store[k]; !ok {
			fmt.Fprintf(&b, "  lost: %s (rv %s)\n", k, v)
		} else if w != v {
			fmt.Fprintf(&b, "  stale: %s store rv %s, server rv %s\n", k, w, v)
		}
	}
	for k, v := range store {
		if _, ok := server[k]; !ok {
			fmt.Fprintf(&b, "  phantom: %s (rv %s)\n", k, v)
		}
	}
	return b.String()
}

// maxAttempts is the most requests the default wait policy (docs/semantics.md, "Waiting") can
// send in d of failure without progress, starting from a fresh backoff: one at once, then one
// after each minimal delay (800 ms ×2, jitter in [d, 2d), cap 30 s), each cut by the resume-RV
// age guard. The RV's age when the failure begins is unknown to the test, so the bound is the
// largest count over every starting age.
func maxAttempts(d time.Duration) int {
	most := 0
	for age0 := time.Duration(0); age0 <= transitions.DefaultResumeRVLifetime; age0 += 100 * time.Millisecond {
		most = max(most, attemptsFrom(d, age0))
	}
	return most
}

func attemptsFrom(d, age0 time.Duration) int {
	n, at, step := 1, time.Duration(0), 800*time.Millisecond
	for {
		wait := step
		if age := age0 + at; age < transitions.DefaultResumeRVLifetime {
			wait = min(wait, max(transitions.MinResumeWait, transitions.DefaultResumeRVLifetime-age))
		}
		at += wait
		if at > d {
			return n
		}
		n++
		step = min(2*step, 30*time.Second)
	}
}

// clientGoAttempts is the most requests client-go's reflector makes in d of the same failure
// with a 429 on every watch: one request per wait of wait.Backoff.DelayWithReset (800 ms ×2,
// cap 30 s, each wait at its lower bound), whose backoff starts over whenever 2 minutes have
// passed since its last reset. docs/semantics.md's outage target compares against it.
func clientGoAttempts(d time.Duration) int {
	n, at, step, lastReset := 1, time.Duration(0), 800*time.Millisecond, time.Duration(0)
	for {
		if at-lastReset > 2*time.Minute {
			step, lastReset = 800*time.Millisecond, at
		}
		at += step
		if at > d {
			return n
		}
		n++
		step = min(2*step, 30*time.Second)
	}
}

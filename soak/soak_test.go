package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// Tolerances for "heap and goroutines stay flat", between the first and the last round.
const (
	goroutineSlack = 20
	heapSlack      = 24 << 20 // bytes of HeapAlloc after GC
)

// TestSoakSim: the chaos soak on the simulator, for a third of -soak.duration.
func TestSoakSim(t *testing.T) {
	t.Parallel()
	b := newSimBackend(t)
	runSoak(t, b, simFaults(b), *soakDuration/3, 1500*time.Millisecond, 5*time.Millisecond)
}

// TestSoakRealServer: the chaos soak on the real kube-apiserver and etcd, for -soak.duration.
func TestSoakRealServer(t *testing.T) {
	t.Parallel()
	b := sharedReal(t)
	runSoak(t, b, realFaults(b), *soakDuration, 3*time.Second, 20*time.Millisecond)
}

// fault strikes and returns what clears it.
type fault struct {
	name   string
	strike func(r *rig, rng *rand.Rand) (clear func() error, err error)
}

// proxyRule adds rules (they act on the next watches) and kicks the open connections so that
// the next watch comes at once.
func proxyRule(name string, rules func(rng *rand.Rand) []faultproxy.Rule) fault {
	return fault{name, func(r *rig, rng *rand.Rand) (func() error, error) {
		for _, ru := range rules(rng) {
			r.proxy.AddRule(ru)
		}
		r.gate.Kick()
		return func() error { r.proxy.ClearRules(); return nil }, nil
	}}
}

func proxyFaults() []fault {
	return []fault{
		proxyRule("429-storm", func(rng *rand.Rand) []faultproxy.Rule {
			// Several watches in a row refused, with and without Retry-After.
			f := faultproxy.Respond(faultproxy.TooManyRequests(0))
			if rng.IntN(2) == 0 {
				f = faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")
			}
			return []faultproxy.Rule{{Kind: faultproxy.Watch, Times: 2 + rng.IntN(4), Fault: f}}
		}),
		proxyRule("429-event", func(rng *rand.Rand) []faultproxy.Rule {
			return []faultproxy.Rule{{Kind: faultproxy.Watch, Times: 1 + rng.IntN(3),
				Fault: faultproxy.WatchError(faultproxy.TooManyRequests(1)).AfterEvents(rng.IntN(4))}}
		}),
		proxyRule("internal-error-event", func(rng *rand.Rand) []faultproxy.Rule {
			return []faultproxy.Rule{{Kind: faultproxy.Watch, Times: 1 + rng.IntN(4),
				Fault: faultproxy.WatchError(faultproxy.InternalError()).AfterEvents(rng.IntN(4))}}
		}),
		proxyRule("reset", func(rng *rand.Rand) []faultproxy.Rule {
			return []faultproxy.Rule{{Kind: faultproxy.Watch, Times: 1 + rng.IntN(3),
				Fault: faultproxy.Reset().AfterEvents(rng.IntN(6))}}
		}),
		proxyRule("truncate", func(rng *rand.Rand) []faultproxy.Rule {
			return []faultproxy.Rule{{Kind: faultproxy.Watch, Times: 1 + rng.IntN(3),
				Fault: faultproxy.Truncate().AfterEvents(rng.IntN(6))}}
		}),
		{"connection-drop", func(r *rig, _ *rand.Rand) (func() error, error) {
			r.gate.Kick()
			return func() error { return nil }, nil
		}},
	}
}

func simFaults(b *testbackend.Sim) []fault {
	return append([]fault{
		{"compact", func(r *rig, _ *rand.Rand) (func() error, error) {
			// Hold the reflector off for a second while the writers go on, then forget all
			// history: the re-watch from its last RV gets 410 Expired.
			holdOff(r)
			b.Server.DropWatches()
			time.Sleep(300 * time.Millisecond)
			b.Server.Compact()
			return func() error { r.proxy.ClearRules(); return nil }, nil
		}},
	}, proxyFaults()...)
}

func realFaults(b *testbackend.Real) []fault {
	return append([]fault{
		{"etcd-pause", func(r *rig, _ *rand.Rand) (func() error, error) {
			if err := b.Server.PauseEtcd(); err != nil {
				return nil, err
			}
			return b.Server.ResumeEtcd, nil
		}},
		{"apiserver-restart", func(r *rig, _ *rand.Rand) (func() error, error) {
			before := b.Server.URL()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := b.Server.RestartAPIServer(ctx); err != nil {
				return nil, err
			}
			if after := b.Server.URL(); after != before {
				return nil, fmt.Errorf("kube-apiserver URL changed on restart: %s → %s", before, after)
			}
			return func() error { return nil }, nil
		}},
		{"etcd-compact", func(r *rig, _ *rand.Rand) (func() error, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			holdOff(r)
			r.gate.Kick()
			time.Sleep(300 * time.Millisecond)
			// The re-watch comes from a compacted RV; the watch cache may still serve it.
			if err := b.Server.Compact(ctx); err != nil {
				return nil, err
			}
			return func() error { r.proxy.ClearRules(); return nil }, nil
		}},
	}, proxyFaults()...)
}

// holdOff makes the next watch wait a second (429, Retry-After: 1), so that the reflector's
// last RV falls behind while the writers go on.
func holdOff(r *rig) {
	r.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")})
}

// schedule: cycles through every fault in a seeded order; the backend's own faults (the first
// ones given) come early in every cycle, so even a short run strikes each of them.
func schedule(faults []fault, own int, seed uint64, round int) fault {
	cycle := round / len(faults)
	r := rand.New(rand.NewPCG(seed, uint64(cycle)))
	ownIdx, other := r.Perm(own), r.Perm(len(faults)-own)
	var order []int
	for i := 0; len(order) < len(faults); i++ {
		if i < len(ownIdx) {
			order = append(order, ownIdx[i])
		}
		if i < len(other) {
			order = append(order, own+other[i])
		}
	}
	return faults[order[round%len(faults)]]
}

// writers create, update and delete configmaps until stopped; pause waits for the writes in
// flight. Failed writes (during a fault) are counted, not fatal.
type writers struct {
	mu       sync.RWMutex
	stop     atomic.Bool
	wg       sync.WaitGroup
	ok, fail atomic.Int64
}

func startWriters(b backend, ns string, n int, every time.Duration, seed uint64) *writers {
	w := &writers{}
	for i := range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for seq := 0; !w.stop.Load(); seq++ {
				w.mu.RLock()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				name := fmt.Sprintf("k-%d-%d", i, rng.IntN(15))
				var err error
				if rng.IntN(4) == 0 {
					if err = b.Delete(ctx, configMaps, ns, name); apierrors.IsNotFound(err) {
						err = nil
					}
				} else {
					err = b.Put(ctx, configMaps, ns, name, fmt.Sprintf("%d-%d", i, seq))
				}
				cancel()
				w.mu.RUnlock()
				if err != nil {
					w.fail.Add(1)
				} else {
					w.ok.Add(1)
				}
				time.Sleep(every)
			}
		}()
	}
	return w
}

func (w *writers) pause()  { w.mu.Lock() }
func (w *writers) resume() { w.mu.Unlock() }
func (w *writers) close()  { w.stop.Store(true); w.wg.Wait() }

type sample struct {
	goroutines int
	heap       uint64
}

func measure() sample {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return sample{runtime.NumGoroutine(), ms.HeapAlloc}
}

type faultStats struct {
	n        int
	maxConv  time.Duration
	sumConv  time.Duration
	failures int
}

func runSoak(t *testing.T, b backend, faults []fault, dur, hold, writeEvery time.Duration) {
	own := len(faults) - len(proxyFaults())
	seed := *soakSeed
	rng := rand.New(rand.NewPCG(seed, 0x50a6))
	r := newRig(t, b, "soak")
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, b.Put(ctx, configMaps, r.ns, fmt.Sprintf("seed-%d", i), "0"))
	}
	r.start(nil)
	_, err := r.converge(convergeBound)
	require.NoError(t, err, "initial sync")

	w := startWriters(b, r.ns, 2, writeEvery, seed)
	defer w.close()

	stats := map[string]*faultStats{}
	var first, last sample
	var maxConv, maxWait, maxBeyond time.Duration
	start := time.Now()
	rounds := 0
	for ; time.Since(start) < dur || rounds == 0; rounds++ {
		f := schedule(faults, own, seed, rounds)
		fs := stats[f.name]
		if fs == nil {
			fs = &faultStats{}
			stats[f.name] = fs
		}
		fs.n++
		clear, err := f.strike(r, rng)
		require.NoError(t, err, "round %d: strike %s", rounds, f.name)
		time.Sleep(hold/2 + time.Duration(rng.Int64N(int64(hold))))
		require.NoError(t, clear(), "round %d: clear %s", rounds, f.name)
		w.pause()
		// The bound runs from the end of the backoff wait in progress, if any: under a fault
		// every few seconds the reflector is never healthy for the 2 minutes that reset its
		// backoff, so that wait grows to [30 s, 60 s) by design (client-go does the same).
		left := r.backoffLeft()
		took, err := r.converge(left + convergeBound)
		if err != nil {
			fs.failures++
			w.resume()
			t.Fatalf("round %d (%s): %v\ncauses: %v", rounds, f.name, err, r.causeCounts())
		}
		fs.sumConv += took
		fs.maxConv = max(fs.maxConv, took)
		maxConv = max(maxConv, took)
		maxWait = max(maxWait, left)
		maxBeyond = max(maxBeyond, took-left)
		r.proxy.Reset()
		r.trimSent(time.Now())
		s := measure()
		if rounds == 0 || time.Since(start) < dur/3 {
			// The baseline is the highest sample of the first third: pooled connections
			// (each one a handful of goroutines here) settle during the first rounds.
			first.goroutines, first.heap = max(first.goroutines, s.goroutines), max(first.heap, s.heap)
		}
		last = s
		w.resume()
		if testing.Verbose() {
			t.Logf("round %3d %-22s converged in %6s (backoff left %5s); goroutines %d heap %.1f MiB; writes ok %d failed %d",
				rounds, f.name, took.Round(10*time.Millisecond), left.Round(10*time.Millisecond), s.goroutines, float64(s.heap)/(1<<20), w.ok.Load(), w.fail.Load())
		}
	}
	w.close()

	r.mu.Lock()
	back, checked := append([]string(nil), r.rvBack...), r.rvChecked
	r.mu.Unlock()
	causes := r.causeCounts()
	var names []string
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	var per []string
	for _, n := range names {
		fs := stats[n]
		per = append(per, fmt.Sprintf("%s ×%d (max %.1f s)", n, fs.n, fs.maxConv.Seconds()))
	}
	var cs []string
	for c, n := range causes {
		cs = append(cs, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(cs)
	st := r.r.Stats()
	t.Logf("RESULT soak %s on %s, seed %d: %d rounds; faults: %s", time.Since(start).Round(time.Second), b.Name(), seed, rounds, strings.Join(per, ", "))
	t.Logf("RESULT converged within %.2f s at worst (%.2f s beyond the backoff wait left, bound %s; longest wait left %.1f s); writes ok %d, failed during faults %d; store RVs checked %d, backwards %d",
		maxConv.Seconds(), maxBeyond.Seconds(), convergeBound, maxWait.Seconds(), w.ok.Load(), w.fail.Load(), checked, len(back))
	t.Logf("RESULT goroutines %d → %d, heap %.1f → %.1f MiB; lists %d, watches %d, lists avoided %d; causes: %s",
		first.goroutines, last.goroutines, float64(first.heap)/(1<<20), float64(last.heap)/(1<<20),
		st.Lists, st.Watches, st.ListsAvoided, strings.Join(cs, " "))
	recordResult("chaos soak: "+strings.Join(per, ", "), b.Name(), fmt.Sprintf("%s, %d rounds, seed %d, %d writes (%d failed during faults)", time.Since(start).Round(time.Second), rounds, seed, w.ok.Load()+w.fail.Load(), w.fail.Load()),
		fmt.Sprintf("lost/stale/phantom 0; converged within %.2f s after the fault cleared (%.2f s beyond the backoff wait in progress; bound: wait + %s; longest wait %.1f s); RV backwards %d of %d; goroutines %d→%d; heap %.1f→%.1f MiB; LISTs %d, WATCHes %d; expired=%d",
			maxConv.Seconds(), maxBeyond.Seconds(), convergeBound, maxWait.Seconds(), len(back), checked, first.goroutines, last.goroutines, float64(first.heap)/(1<<20), float64(last.heap)/(1<<20), st.Lists, st.Watches, causes[fsm.CauseExpired]+causes[fsm.CauseExpiredAgain]))

	require.Empty(t, back, "resourceVersions in the store went backwards")
	require.LessOrEqual(t, last.goroutines, first.goroutines+goroutineSlack, "goroutines grew")
	require.LessOrEqual(t, last.heap, first.heap+heapSlack, "heap grew")
}

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/transitions"
)

// docs/semantics.md "silent watch": a watch held open with nothing on it (a load balancer that
// lost its backend, a stalled proxy) is replaced within the silence bound by a re-watch from the
// last RV, with no LIST.
func TestSilentWatchIsReplacedWithoutList(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		stall := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Stall()})
		const bound = 3 * time.Second
		e.start(func(c *rewatch.Config) { c.WatchSilence = bound })
		e.converged()
		e.write("a") // never reaches the reflector through the stalled stream
		e.converged()
		require.Equal(t, 1, stall.Fired())
		require.Len(t, e.requests(faultproxy.List), 1, "no LIST: the silent watch was resumed")
		ws := e.requests(faultproxy.Watch)
		require.GreaterOrEqual(t, len(ws), 2, e.describe())
		require.Equal(t, ws[0].Query.Get("resourceVersion"), ws[1].Query.Get("resourceVersion"), "re-watch from the last RV")
		gap := ws[1].Time.Sub(ws[0].Time)
		require.GreaterOrEqual(t, gap, bound, "replaced before it was silent for the bound")
		require.Less(t, gap, bound+bound/8+5*time.Second, "replaced within the bound (and the watchdog's step), not at the watch's timeout (minutes)")
		tr := e.waitCause(fsm.CauseStreamEnded)
		require.Equal(t, fsm.Timeout, tr.Event.Failure.Transport)
		e.report("silent watch (stalled proxy)", fmt.Sprintf("re-watch at same RV after %v, no LIST", gap.Round(100*time.Millisecond)))
	})
}

// onRealAndSim runs a scenario where the server's own behaviour is the point: on the real
// kube-apiserver (JSON) and on the simulator.
func onRealAndSim(t *testing.T, scenario func(t *testing.T, b backend)) {
	t.Run("sim", func(t *testing.T) { scenario(t, newSimBackend(t)) })
	t.Run("kube-apiserver", func(t *testing.T) { scenario(t, sharedReal(t)) })
}

// docs/semantics.md "silent watch": a watch that was delivering and falls silent is bounded by
// its cadence, not by WatchSilence: on a resource written every 250 ms, a stream the proxy
// stalls after 20 events is ended 5 s after its last frame (the floor) and re-watched from the
// last RV on a fresh connection, while the watch cache still holds that RV — no 410, no LIST.
// Before the rule, on the real server, the same stall was re-watched after 167 s, was answered
// 410 twice and relisted.
func TestBusySilentWatchIsReplacedBeforeItsRVExpires(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		stall := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Stall().AfterEvents(20)})
		e.start(nil) // the defaults: WatchSilence 150 s, the cadence bound 5–45 s
		e.converged()

		ctx, cancel := context.WithCancel(context.Background())
		writes := make(chan struct{})
		go func() {
			defer close(writes)
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				_ = b.Put(ctx, configMaps, e.ns, fmt.Sprintf("obj-%d", i%5), strconv.Itoa(i))
			}
		}()
		defer func() { cancel(); <-writes }()

		tr := e.waitCauseWithin(fsm.CauseWatchSilent, 90*time.Second)
		require.Equal(t, 1, stall.Fired())
		silent := tr.Event.Now.Sub(tr.Snapshot.Watch.Silence.LastFrame.Time())
		require.GreaterOrEqual(t, silent, transitions.DefaultActiveWatchSilenceFloor, "not cut before the floor")
		require.LessOrEqual(t, silent, 60*time.Second, "re-watched within 60 s of the stall")
		time.Sleep(3 * time.Second) // the resumed watch catches up while the writes go on
		cancel()
		<-writes
		e.converged()

		require.Len(t, e.requests(faultproxy.List), 1, "no full-state transfer: the silent watch was resumed")
		ws := e.requests(faultproxy.Watch)
		require.GreaterOrEqual(t, len(ws), 2, e.describe())
		require.True(t, tr.Commands[1].FreshConnection, "the re-watch asks for a fresh connection")
		require.Equal(t, tr.Snapshot.LastRV, ws[1].Query.Get("resourceVersion"), "re-watch from the last RV")
		for _, w := range ws[1:] {
			require.NotEqual(t, 410, w.Status, "the resumed RV was still in the watch cache")
		}
		e.report("busy watch stalled (writes every 250 ms)", fmt.Sprintf("re-watch %v after the last frame, same RV, fresh connection, no LIST", silent.Round(100*time.Millisecond)))
	})
}

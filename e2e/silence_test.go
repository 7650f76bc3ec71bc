package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
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

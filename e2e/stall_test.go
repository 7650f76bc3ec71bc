package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
)

// docs/semantics.md "A response that stops halfway", on kube-apiserver: the first LIST of 3,000
// ConfigMaps stops halfway behind a proxy that holds the connection open. The transport cancels
// it once its body has not moved for ListProgressTimeout, and the reflector lists again in
// pages: in sync well within a minute of the stall, with two full-state transfers — the
// stalled one and the paged one.
func TestAStalledListIsAskedAgain(t *testing.T) {
	b := sharedReal(t)
	// Most of its minute is the progress bound: it waits beside the others.
	t.Parallel()
	const objects = 3000
	e := newEnv(t, b, configMaps, 0)
	for i := range objects {
		require.NoError(t, b.Put(t.Context(), configMaps, e.ns, fmt.Sprintf("cm-%04d", i), "x"))
	}
	stall := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, PathContains: "/configmaps", Fault: faultproxy.StallMidBody()})
	e.start(nil)
	require.True(t, waitFor(30*time.Second, func() bool { return stall.Fired() == 1 }), "the first LIST stalled")
	stalledAt := time.Now()
	require.True(t, waitFor(90*time.Second, e.r.HasSynced), "never synced:\n%s", e.describe())
	took := time.Since(stalledAt)
	e.converged()
	full := 0
	for _, r := range e.requests(faultproxy.List) {
		if r.Query.Get("continue") == "" {
			full++
		}
	}
	tr := e.waitCause(fsm.CauseListStalled)
	require.Equal(t, fsm.Stalled, tr.Event.Failure.Transport)
	require.Less(t, took, time.Minute, "in sync within a minute of the stall")
	require.LessOrEqual(t, full, 2, "full-state transfers: the stalled LIST and the one asked again")
	t.Logf("in sync %v after the stall, %d full-state transfers", took.Round(time.Millisecond), full)
	e.report("a LIST that stops halfway, 3,000 ConfigMaps", fmt.Sprintf("in sync %v after the stall, %d full-state transfers", took.Round(100*time.Millisecond), full))
}

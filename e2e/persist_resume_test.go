package e2e

import (
	"context"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/persist"
)

// quietFor is how long the quiet resource's watches are counted after its restart: 20 s in CI;
// `go test -run TestQuietResumeCatchesUpByTheCatchUpDeadline ./e2e/ -args -quiet-for=5m` checks
// the 5 minutes docs/semantics.md speaks of (the usual watch's own timeout is 5 to 10 minutes).
var quietFor = flag.Duration("quiet-for", 20*time.Second, "how long a quiet resource's watches are counted after its restart")

// docs/semantics.md "Persisted cache", "A quiet resource": a reflector restarted from its
// persisted store while other resources were written — the probe's consistent read is past
// every event of its own — catches up by the catch-up watch's 3 s deadline: on the bookmark
// kube-apiserver sends 2 s before it when its watch cache has moved since the watch began, or
// else on the clean end of the watch at that deadline ("A catch-up watch that the server ends
// at its deadline"). Synced through the watch, with one LIST (the probe's one item) and no
// relist, where the watch's first periodic bookmark would come after one or two minutes; and
// the watch after the catch-up is not cut for silence.
func TestQuietResumeCatchesUpByTheCatchUpDeadline(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 5)
	dir := filepath.Join(t.TempDir(), "cache")
	// Pages of two: the five objects are more than the probe's page, so the start resumes
	// through the watch rather than take the probe's page as its state.
	persisted := func(c *rewatch.Config) { c.Persist, c.Policy.PageSize = persist.Dir(dir), 2 }
	e.start(persisted)
	e.converged()
	require.True(t, waitFor(30*time.Second, e.r.HasSynced))
	e.stop()

	// Another resource moves etcd's revision; the watched one stays quiet.
	require.NoError(t, b.EnsureNamespace(context.Background(), e.ns+"-other"))

	e.store = driver.NewMemStore()
	e.mu.Lock()
	e.trans = nil
	e.mu.Unlock()
	before := len(e.requests(faultproxy.List))
	watchesBefore := len(e.requests(faultproxy.Watch))
	began := time.Now()
	e.start(persisted)
	require.True(t, waitFor(30*time.Second, e.r.HasSynced), "never synced:\n%s", e.describe())
	took := time.Since(began)
	e.converged()
	st := e.r.Stats()
	t.Logf("restart from the snapshot to HasSynced: %v (%s)", took.Round(time.Millisecond), st.Start)
	assert.Equal(t, rewatch.StartResumed, st.Start.Way, "%s\n%s", st.Start, e.describe())
	lists := e.requests(faultproxy.List)[before:]
	if assert.Len(t, lists, 1, "the probe only") {
		assert.Equal(t, "1", lists[0].Query.Get("limit"))
	}
	e.mu.Lock()
	for _, tr := range e.trans {
		assert.NotEqual(t, fsm.CauseCatchUpMissed, tr.Cause, "the catch-up watch was cut before it caught up")
	}
	e.mu.Unlock()

	// The catch-up taught the silence rule no cadence ("A catch-up teaches the silence rule
	// nothing"): the quiet resource's watch after it is not cut 5 s later. quietFor on, two
	// WATCHes: the catch-up and the usual one.
	time.Sleep(*quietFor)
	watches := e.requests(faultproxy.Watch)[watchesBefore:]
	assert.Len(t, watches, 2, "the catch-up watch and the usual one, nothing cut for silence:\n%s", e.describe())
	e.mu.Lock()
	for _, tr := range e.trans {
		assert.NotEqual(t, fsm.CauseWatchSilent, tr.Cause, "a quiet resource's watch was cut for silence")
	}
	e.mu.Unlock()
}

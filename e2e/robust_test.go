package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
)

// listQuery is a LIST request's paging, for assertions and failure messages.
func listQuery(r faultproxy.Record) string {
	return "rv=" + r.Query.Get("resourceVersion") + " match=" + r.Query.Get("resourceVersionMatch") +
		" limit=" + r.Query.Get("limit") + " continue=" + r.Query.Get("continue")
}

// docs/semantics.md "Relist after a watch failure": a consistent read paged by the watch cache
// says nothing about the server; relists stay one request. The sequence: LIST rv=0 (one page) →
// watch answered "too large resource version" → LIST rv="" limit=10, which the v1.37 watch
// cache pages → watch → 410 → relist at the last RV, which must be one request.
func TestRelistStaysWholeAfterPagedConsistentRead(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 25)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.TooLargeResourceVersion(100, 10))})
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Nth: 2, Times: 1, Fault: faultproxy.WatchError(faultproxy.Expired())})
		e.start(func(c *rewatch.Config) { c.PageSize = 10 })
		e.waitCause(fsm.CauseExpired)
		e.write("a")
		e.converged()
		ls := e.requests(faultproxy.List)
		var consistent, continued int
		for _, r := range ls {
			if r.Query.Has("resourceVersion") && r.Query.Get("resourceVersion") == "" {
				consistent++
			}
			if r.Query.Get("continue") != "" {
				continued++
			}
		}
		require.Equal(t, 1, consistent, "one consistent read, after the too-large RV")
		require.Positive(t, continued, "the server paged the consistent read (the premise)")
		last := ls[len(ls)-1]
		require.False(t, last.Query.Has("limit"), "the relist after the 410 is one request: %s", listQuery(last))
		require.Equal(t, "NotOlderThan", last.Query.Get("resourceVersionMatch"))
		e.report("relist after a paged consistent read", "relist stays one request")
	})
}

// docs/semantics.md "Initial LIST": a continuation page the server refuses (400: a token it
// cannot read) restarts the listing from page 1 after the wait, as client-go does; retrying
// the token the server refused would be refused forever. The real server pages the
// consistent read that follows a "too large resource version".
func TestContinuationRefusedRestartsFromPageOne(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 25)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.TooLargeResourceVersion(100, 10))})
		corrupt := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1, Fault: faultproxy.CorruptContinue()})
		e.start(func(c *rewatch.Config) { c.PageSize = 10 })
		e.waitCause(fsm.CauseListRejected)
		e.write("a")
		e.converged()
		require.Equal(t, 1, corrupt.Fired())
		ls := e.requests(faultproxy.List)
		refused := -1
		for i, r := range ls {
			if r.Fault != "" {
				refused = i
			}
		}
		require.Equal(t, 400, ls[refused].Status, "the server itself refused the token")
		require.Greater(t, len(ls), refused+1)
		next := ls[refused+1]
		require.Empty(t, next.Query.Get("continue"), "after a refused token the list starts again from page 1: %s", listQuery(next))
		e.report("continuation page refused (400)", "restart from page 1")
	})
}

// docs/semantics.md "A list that cannot be served whole": a first LIST bigger than MaxListBytes
// (rv=0, which the watch cache serves whole whatever the limit) syncs by pages, and so does a
// relist at a known RV; no identical request is repeated.
func TestListTooBigForMaxListBytesSyncsByPages(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 40)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.WatchError(faultproxy.Expired())})
		e.start(func(c *rewatch.Config) { c.PageSize = 5; c.MaxListBytes = 6 << 10 })
		e.waitCause(fsm.CauseExpired)
		e.write("a")
		e.converged()
		ls := e.requests(faultproxy.List)
		for i := 1; i < len(ls); i++ {
			require.NotEqual(t, ls[i-1].Query.Encode(), ls[i].Query.Encode(), "LIST %d repeats the request before it:\n%s", i, e.describe())
		}
		refused, ok := e.r.Stats().LastFailures[fsm.CauseWholeListRefused]
		require.True(t, ok, "the whole list was refused first:\n%s", e.describe())
		require.Contains(t, refused.Message, "exceeds MaxListBytes")
		require.Equal(t, 1, e.r.Stats().Retries[fsm.CauseWholeListRefused], "once: every LIST pages from then on")
		for _, r := range ls {
			require.True(t, r.Query.Get("resourceVersion") == "0" || r.Query.Has("limit"), "only the first LIST, at RV 0, is whole: %s", listQuery(r))
		}
		e.report("LIST over MaxListBytes", "first LIST and relist by pages")
	})
}

// docs/semantics.md "watch refused": one 403 opening the watch — as a restarting apiserver
// answers before its authorizer has synced — is answered by a re-watch from the last RV after
// the backoff, with no LIST (a second one in a row relists: transcript rejected_watch).
func TestWatchRefusedOnceRewatches(t *testing.T) {
	onRealAndSim(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		forbidden := faultproxy.Respond(faultproxy.Forbidden(schema.GroupResource{Resource: "configmaps"}))
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: forbidden})
		e.start(nil)
		e.waitCause(fsm.CauseWatchRejectedOnce)
		e.write("a")
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 1, "no LIST after one refusal")
		ws := e.requests(faultproxy.Watch)
		require.GreaterOrEqual(t, len(ws), 2)
		require.Equal(t, ws[0].Query.Get("resourceVersion"), ws[1].Query.Get("resourceVersion"), "re-watch from the last RV")

		e.report("watch refused once (403)", "re-watch at the same RV, no LIST")
	})
}

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// Sync a real resource, then follow creates, updates and deletes (configmaps and a CRD).
func TestSyncFollowsWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, gvr := range []schema.GroupVersionResource{configMaps, widgets} {
			t.Run(gvr.Resource, func(t *testing.T) {
				e := newEnv(t, b, gvr, 12)
				e.start(nil)
				e.converged()
				e.write("a")
				e.write("b")
				e.converged()
				lists, watches := e.proxy.Counts()
				require.Equal(t, 1, lists)
				require.Equal(t, 1, watches)
				e.report("sync and follow writes ("+gvr.Resource+")", "store = fresh LIST")
			})
		}
	})
}

// docs/semantics.md "429 opening a watch": Backoff honouring Retry-After, then re-watch from the
// last RV; no LIST.
func Test429OpeningWatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
			Fault: faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")})
		e.start(nil)
		tr := e.waitCause(fsm.CauseServerBusy)
		require.Equal(t, time.Second, armedDelay(tr), "Retry-After honoured")
		e.waitCause(fsm.CauseRetryWatch)
		e.write("a")
		e.converged()
		ws := e.requests(faultproxy.Watch)
		require.Len(t, e.requests(faultproxy.List), 1, "no LIST after a 429")
		require.GreaterOrEqual(t, len(ws), 2)
		require.Equal(t, ws[0].Query.Get("resourceVersion"), ws[1].Query.Get("resourceVersion"))
		e.report("429 opening a watch", "waited Retry-After 1s; re-watch at same RV")
	})
}

// docs/semantics.md "429 as a watch ERROR event": re-watch from the last RV after
// details.retryAfterSeconds; no LIST.
func Test429ErrorEvent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
			Fault: faultproxy.WatchError(faultproxy.TooManyRequests(2)).AfterEvents(1)})
		e.start(nil)
		e.converged()
		e.write("a")
		tr := e.waitCause(fsm.CauseServerBusy)
		require.Equal(t, 2*time.Second, armedDelay(tr), "details.retryAfterSeconds honoured")
		e.waitCause(fsm.CauseRetryWatch)
		e.converged()
		e.write("b")
		e.converged()
		ws := e.requests(faultproxy.Watch)
		require.Len(t, e.requests(faultproxy.List), 1)
		require.Equal(t, tr.Snapshot.LastRV, ws[1].Query.Get("resourceVersion"), "re-watch from the last RV observed")
		e.report("429 as ERROR event", "waited retryAfterSeconds 2s; re-watch at last RV")
	})
}

// docs/semantics.md InternalError row: re-watch with backoff inside the window; no LIST.
func TestInternalErrorEventAndAtOpen(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.WatchError(faultproxy.InternalError()).AfterEvents(1)})
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Nth: 2, Times: 1, Fault: faultproxy.Respond(faultproxy.InternalError())})
		e.start(nil)
		e.converged()
		e.write("a")
		e.waitCause(fsm.CauseInternalErrorInWindow)
		require.True(t, waitFor(30*time.Second, func() bool { return len(e.requests(faultproxy.Watch)) >= 3 }), e.describe())
		e.write("b")
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 1)
		e.report("500 InternalError (event, then at open)", "two re-watches with backoff inside the window")
	})
}

// docs/semantics.md "watch stream ends (... reset ...)": re-watch at once from the last RV.
func TestResetMidStream(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Reset().AfterEvents(1)})
		e.start(nil)
		e.converged()
		e.write("a")
		tr := e.waitCause(fsm.CauseStreamEnded)
		require.Equal(t, time.Duration(-1), armedDelay(tr), "a stream end re-watches at once")
		e.write("b")
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 1)
		e.report("connection reset mid-stream", "re-watch at once")
	})
}

// docs/semantics.md "connection refused / reset / EOF before the watch opened": re-watch with
// backoff.
func TestConnectionDroppedBeforeWatchOpened(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 2, Fault: faultproxy.Refuse()})
		e.start(nil)
		e.waitCause(fsm.CauseConnectFailed)
		e.write("a")
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 1)
		require.GreaterOrEqual(t, len(e.requests(faultproxy.Watch)), 3)
		e.report("connection dropped before the watch opened (×2)", "backoff, re-watch")
	})
}

// docs/semantics.md "410 Gone / Expired" as an ERROR event: exactly one relist, at the last RV.
func TestExpiredEventRelistsAtLastRV(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.WatchError(faultproxy.Expired()).AfterEvents(1)})
		e.start(nil)
		e.converged()
		e.write("a")
		tr := e.waitCause(fsm.CauseExpired)
		e.waitCause(fsm.CauseListComplete)
		e.write("b")
		e.converged()
		ls := e.requests(faultproxy.List)
		require.Len(t, ls, 2, "exactly one relist")
		require.Equal(t, tr.Snapshot.LastRV, ls[1].Query.Get("resourceVersion"), "relist at the last RV, not \"\"")
		// docs/semantics.md "Requests": the first LIST pages; the relist at a known RV is one
		// request that the watch cache serves.
		require.Equal(t, "500", ls[0].Query.Get("limit"))
		require.False(t, ls[1].Query.Has("limit"), "relist at a known RV asks for the whole list: %s", ls[1].Query.Encode())
		require.Equal(t, "NotOlderThan", ls[1].Query.Get("resourceVersionMatch"))
		e.report("410 Expired as ERROR event", "one relist at last RV, in one request")
	})
}

// A real 410: the server's own history is compacted while the reflector watches, the stream
// drops, and the re-watch from the last RV is answered with the server's 410.
func TestRealExpiryAfterCompaction(t *testing.T) {
	run := func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Reset().AfterDelay(3 * time.Second)})
		e.start(nil)
		e.converged()
		// Move the server's revision past the reflector's RV elsewhere, then compact.
		for i := range 3 {
			require.NoError(t, b.Put(context.Background(), configMaps, "default", fmt.Sprintf("elsewhere-%s-%d", e.ns, i), "x"))
		}
		require.NoError(t, b.ExpireHistory(context.Background()))
		e.waitCause(fsm.CauseExpired)
		e.waitCause(fsm.CauseListComplete)
		e.write("a")
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 2)
		e.report("410 from real compaction", "server's own 410; one relist")
	}
	// Bookmarks would carry the reflector's RV past the compaction (as they should); the real
	// server's etcd-served watch sends none either.
	t.Run("sim", func(t *testing.T) { run(t, newSimBackendWithBookmarks(t, time.Hour)) })
	t.Run("sim-protobuf", func(t *testing.T) { run(t, inProtobuf{newSimBackendWithBookmarks(t, time.Hour)}) })
	t.Run("kube-apiserver", func(t *testing.T) {
		// Compaction only reaches a watch served by etcd; the watch cache keeps recent history.
		rb, err := testbackend.StartRealWithin(20*time.Minute, apiserverNoWatchCache())
		if err != nil {
			testbackend.Unavailable(t, err)
		}
		t.Cleanup(rb.Server.Stop)
		run(t, rb)
		t.Run("protobuf", func(t *testing.T) { run(t, inProtobuf{rb}) })
	})
}

// docs/semantics.md "too large resource version": relist with RV "".
func TestTooLargeResourceVersion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Respond(faultproxy.TooLargeResourceVersion(100, 10))})
		e.start(nil)
		e.waitCause(fsm.CauseTooLargeRV)
		e.write("a")
		e.converged()
		ls := e.requests(faultproxy.List)
		require.Len(t, ls, 2)
		require.True(t, ls[1].Query.Has("resourceVersion") && ls[1].Query.Get("resourceVersion") == "", "relist as a consistent read")
		e.report("too large resource version", "relist with RV \"\"")
	})
}

// docs/semantics.md "LIST fails: 429": Backoff honouring Retry-After, then retry the LIST.
func TestListTooManyRequests(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1,
			Fault: faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")})
		e.start(nil)
		tr := e.waitCause(fsm.CauseListFailed)
		require.Equal(t, time.Second, armedDelay(tr))
		e.converged()
		require.Len(t, e.requests(faultproxy.List), 2)
		e.report("LIST fails with 429", "waited Retry-After 1s, one retry")
	})
}

// docs/semantics.md "LIST fails: 401 / 403 / 404": backoff, relist; never a hot loop.
func TestListNotFoundBacksOff(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 5)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 4,
			Fault: faultproxy.Respond(faultproxy.NotFound(schema.GroupResource{Resource: "configmaps"}))})
		fast := backoff.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 1, Steps: 38, Cap: 30 * time.Second}
		e.start(func(c *rewatch.Config) { c.Backoff = fast })
		e.converged()
		ls := e.requests(faultproxy.List)
		require.Len(t, ls, 5)
		for i := 1; i < 4; i++ {
			gap := ls[i].Time.Sub(ls[i-1].Time)
			lo, _ := fast.Bounds(i - 1)
			require.GreaterOrEqual(t, gap, lo, "LIST %d came %v after the previous one: a hot loop", i, gap)
		}
		e.report("LIST fails with 404 (×4)", "backoff 100ms→1.6s between LISTs")
	})
}

// docs/semantics.md "initial transfer cut": a LIST body cut mid-way backs off and retries.
func TestListBodyCut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 50)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1, Fault: faultproxy.Truncate()})
		e.start(nil)
		tr := e.waitCause(fsm.CauseListFailed)
		require.Positive(t, armedDelay(tr))
		e.converged()
		e.report("LIST body cut", "backoff, one retry")
	})
}

// docs/semantics.md "initial transfer cut (watch-list stream ends before its initial-events-end
// bookmark)": back off and retry, never a hot loop.
func TestWatchListTransferCut(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 20)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1, Fault: faultproxy.Truncate().AfterEvents(5)})
		e.start(func(c *rewatch.Config) { c.WatchList = true })
		tr := e.waitCause(fsm.CauseInitialTransferCut)
		require.Positive(t, armedDelay(tr))
		e.waitCause(fsm.CauseInitialEventsEnd)
		e.write("a")
		e.converged()
		require.Empty(t, e.requests(faultproxy.List), "watch-list needs no LIST")
		e.report("watch-list initial transfer cut", "backoff, retry; 0 LISTs")
	})
}

// docs/semantics.md "stop": stopping during a 30 s backoff returns at once; goleak in TestMain.
func TestStopDuringBackoff(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b, configMaps, 3)
		e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: -1,
			Fault: faultproxy.Respond(faultproxy.TooManyRequests(30)).WithHeader("Retry-After", "30")})
		e.start(nil)
		tr := e.waitCause(fsm.CauseServerBusy)
		require.Equal(t, 30*time.Second, armedDelay(tr))
		took := e.stop()
		require.Less(t, took, time.Second)
		require.Equal(t, fsm.Stopped, e.r.Stats().State)
		e.report("stop during a 30s backoff", fmt.Sprintf("returned in %v", took.Round(time.Millisecond)))
	})
}

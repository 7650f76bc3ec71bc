package driver_test

import (
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// client-go's stores plug in unchanged: the method sets match structurally.
var (
	_ driver.Store = cache.NewStore(cache.MetaNamespaceKeyFunc)
	_ driver.Store = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ driver.Store = cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc})
)

func TestSyncsAndFollowsWrites(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 7)
		w.run(nil)
		w.synced()
		_, err := w.sim.Create(sim.ConfigMaps, "default", "new", map[string]string{"x": "1"})
		require.NoError(t, err)
		_, err = w.sim.Update(sim.ConfigMaps, "default", "cm-0", map[string]string{"x": "2"})
		require.NoError(t, err)
		_, err = w.sim.Delete(sim.ConfigMaps, "default", "cm-1")
		require.NoError(t, err)
		w.synced()
		lists, watches := w.proxy.Counts()
		require.Equal(t, 1, lists)
		require.Equal(t, 1, watches)
		require.NoError(t, w.stop())
	})
}

func TestTypedDecoderFillsAClientGoStore(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 3)
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		w.run(func(c *driver.Config, h *httpapi.Config) { c.Store, h.Decoder = store, httpapi.Typed(scheme.Scheme) })
		require.Eventually(t, func() bool { return len(store.ListKeys()) == 3 }, 10*time.Second, 2*time.Millisecond)
		obj, ok, err := store.GetByKey("default/cm-0")
		require.NoError(t, err)
		require.True(t, ok)
		require.IsType(t, &corev1.ConfigMap{}, obj)
		require.Equal(t, "0", obj.(*corev1.ConfigMap).Data["i"])
	})
}

// docs/semantics.md "429 opening a watch": Backoff honouring Retry-After, then re-watch from the
// last RV; no LIST.
func Test429AtWatchStartRewatchesWithoutList(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 5)
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
			Fault: faultproxy.Respond(faultproxy.TooManyRequests(7)).WithHeader("Retry-After", "7")})
		w.run(nil)
		require.Equal(t, 7*time.Second, w.waitTimer())
		w.clock.Add(7 * time.Second)
		w.waitState(fsm.Watching)
		w.synced()
		require.Eventually(t, func() bool { _, watches := w.proxy.Counts(); return watches == 2 }, 10*time.Second, time.Millisecond)
		lists, _ := w.proxy.Counts()
		require.Equal(t, 1, lists, "a 429 must not cause a LIST")
		rvs := w.watchRVs()
		require.Equal(t, rvs[0], rvs[1], "the re-watch resumes from the RV of the first")
	})
}

// docs/semantics.md "429 as a watch ERROR event": honours details.retryAfterSeconds; no LIST.
func Test429ErrorEventHonoursRetryAfterSeconds(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 2)
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
			Fault: faultproxy.WatchError(faultproxy.TooManyRequests(3)).AfterEvents(0).AfterDelay(10 * time.Millisecond)})
		w.run(nil)
		require.Equal(t, 3*time.Second, w.waitTimer())
		// The timer is armed before the transition that armed it is recorded: wait for the
		// transition, so that the wait for Watching below is for the re-watch after it.
		w.waitCause(fsm.CauseServerBusy)
		w.clock.Add(3 * time.Second)
		w.waitState(fsm.Watching)
		require.Eventually(t, func() bool { _, watches := w.proxy.Counts(); return watches == 2 }, 10*time.Second, time.Millisecond)
		lists, _ := w.proxy.Counts()
		require.Equal(t, 1, lists)
	})
}

// docs/semantics.md "410 Gone / Expired": exactly one extra LIST, at the last RV.
func TestExpiredRelistsOnceAtLastRV(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 2)
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
			Fault: faultproxy.WatchError(faultproxy.Expired()).AfterDelay(10 * time.Millisecond)})
		w.run(nil)
		w.synced()
		require.Eventually(t, func() bool { l, wt := w.proxy.Counts(); return l == 2 && wt == 2 }, 10*time.Second, 2*time.Millisecond)
		reqs := w.proxy.Requests()
		require.Equal(t, faultproxy.List, reqs[2].Kind)
		require.Equal(t, reqs[1].Query.Get("resourceVersion"), reqs[2].Query.Get("resourceVersion"), "relist at the last RV, not \"\"")
	})
}

// docs/semantics.md "stop": stopping during a 30 s backoff returns at once; goleak (TestMain)
// proves nothing is left running.
func TestStopDuringBackoffReturnsAtOnce(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 1)
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: -1, Fault: faultproxy.Respond(faultproxy.TooManyRequests(30)).WithHeader("Retry-After", "30")})
		w.run(nil)
		require.Equal(t, 30*time.Second, w.waitTimer())
		start := time.Now()
		require.NoError(t, w.stop())
		require.Less(t, time.Since(start), time.Second)
		require.Zero(t, w.clock.Armed(), "the backoff timer was not stopped")
	})
}

func TestStopMidWatchAndMidList(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 1)
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, Times: 1, Fault: faultproxy.Delay(time.Hour)})
		w.run(nil)
		require.Eventually(t, func() bool { return len(w.proxy.Requests()) == 1 }, 10*time.Second, time.Millisecond)
		require.NoError(t, w.stop()) // mid-LIST
		w2 := newWorld(t, kind, 1)
		w2.run(nil)
		w2.synced()
		require.NoError(t, w2.stop()) // mid-watch
	})
}

// docs/semantics.md "Relists": the driver hands a full state to an IncrementalStore item by
// item — over both transports — so an object the relist did not change keeps its stored copy,
// a changed one is replaced and one deleted meanwhile is gone once the relist finishes.
func TestRelistIntoIncrementalStore(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 3)
		// Every watch ends with a 410 at once, so the changes below reach the store only
		// through a relist.
		w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: -1, Fault: faultproxy.WatchError(faultproxy.Expired())})
		w.run(nil)
		w.synced()
		before, ok := w.store.GetByKey("default/cm-0")
		require.True(t, ok)
		_, err := w.sim.Update(sim.ConfigMaps, "default", "cm-1", map[string]string{"x": "2"})
		require.NoError(t, err)
		_, err = w.sim.Delete(sim.ConfigMaps, "default", "cm-2")
		require.NoError(t, err)
		w.proxy.ClearRules()
		require.Eventually(t, func() bool {
			w.clock.Add(time.Second) // through whatever wait the repeated 410s armed
			return maps.Equal(w.store.Versions(), w.sim.Snapshot(sim.ConfigMaps))
		}, 10*time.Second, 2*time.Millisecond)
		after, ok := w.store.GetByKey("default/cm-0")
		require.True(t, ok)
		require.Same(t, before, after, "an unchanged object keeps its stored copy")
	})
}

// docs/semantics.md "Relists": over the HTTP transport a relist into a MemStore leaves the
// items the store holds at the same resourceVersion undecoded — the transport hands over only
// their key — and the store keeps them, while a changed item is decoded and replaced and a
// deleted one goes at the end. Likewise for a watch-list relist's initial events.
func TestRelistLeavesUnchangedItemsUndecoded(t *testing.T) {
	for _, watchList := range []bool{false, true} {
		t.Run(map[bool]string{false: "list", true: "watch-list"}[watchList], func(t *testing.T) {
			w := newWorld(t, viaHTTP, 3)
			if watchList {
				// The watch-list stream ends with a 410 once its initial state is in (three
				// objects and the bookmark); the relist's stream is left alone.
				w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.WatchError(faultproxy.Expired()).AfterEvents(4)})
			} else {
				w.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: -1, Fault: faultproxy.WatchError(faultproxy.Expired())})
			}
			w.run(func(c *driver.Config, _ *httpapi.Config) { c.Policy.WatchList = watchList })
			w.synced()
			before, _ := w.store.GetByKey("default/cm-0")
			if !watchList {
				// Every watch ends in a 410: one relist at once, then a wait before the next,
				// during which the objects change.
				w.waitState(fsm.Backoff)
				_, err := w.sim.Update(sim.ConfigMaps, "default", "cm-1", map[string]string{"x": "2"})
				require.NoError(t, err)
				_, err = w.sim.Delete(sim.ConfigMaps, "default", "cm-2")
				require.NoError(t, err)
				w.proxy.ClearRules()
			}
			// Wait for the relist to end, not for the store to match the server: the unchanged
			// store matches it already while a watch-list relist is still streaming.
			var kept, decoded []string
			require.Eventually(t, func() bool {
				w.clock.Add(time.Second)
				var ended bool
				kept, decoded, ended = w.fullStateItems()
				return ended
			}, 10*time.Second, 2*time.Millisecond, "the relist never ended")
			require.Equal(t, w.sim.Snapshot(sim.ConfigMaps), w.store.Versions())
			after, ok := w.store.GetByKey("default/cm-0")
			require.True(t, ok)
			require.Same(t, before, after)
			if watchList {
				require.Equal(t, []string{"default/cm-0", "default/cm-1", "default/cm-2"}, kept)
				return
			}
			require.Equal(t, []string{"default/cm-0"}, kept)
			require.Contains(t, decoded, "default/cm-1")
			require.NoError(t, w.stop())
		})
	}
}

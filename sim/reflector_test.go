package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// runReflector runs client-go's real Reflector against the simulator and
// returns its store; it stops when the test ends.
func runReflector(t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, watchList bool) cache.Store {
	t.Helper()
	ri := dc.Resource(gvr)
	var lw cache.ListerWatcher = &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return ri.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return ri.Watch(ctx, o)
		},
	}
	if !watchList {
		lw = noWatchList{lw}
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	r := cache.NewReflector(lw, &unstructured.Unstructured{}, store, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.RunWithContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return store
}

// noWatchList makes client-go's Reflector use LIST+WATCH even though its
// WatchListClient gate is on by default since v0.35
// (watchlist.DoesClientNotSupportWatchListSemantics).
type noWatchList struct{ cache.ListerWatcher }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

func requireConverges(t *testing.T, s *Server, gvr schema.GroupVersionResource, store cache.Store) {
	t.Helper()
	eventually(t, func() bool {
		return fmt.Sprint(storeSnapshot(store)) == fmt.Sprint(s.Snapshot(gvr))
	}, "reflector store never matched the server")
}

// The real client-go Reflector lists and watches the simulator and its
// store follows creates, updates and deletes.
func TestClientGoReflectorFollowsWrites(t *testing.T) {
	for _, tc := range []struct {
		gvr       schema.GroupVersionResource
		watchList bool
	}{{ConfigMaps, false}, {Widgets, false}, {ConfigMaps, true}, {Widgets, true}} {
		gvr := tc.gvr
		t.Run(fmt.Sprintf("%s/watchList=%v", gvr.Resource, tc.watchList), func(t *testing.T) {
			s, u, c := startSim(t, Options{Resources: []schema.GroupVersionResource{ConfigMaps, Widgets}})
			for i := range 5 {
				_, err := s.Create(gvr, "default", fmt.Sprintf("obj-%d", i), map[string]string{"i": fmt.Sprint(i)})
				require.NoError(t, err)
			}
			store := runReflector(t, dynamicClient(t, u), gvr, tc.watchList)
			requireConverges(t, s, gvr, store)

			_, err := s.Update(gvr, "default", "obj-1", map[string]string{"i": "updated"})
			require.NoError(t, err)
			_, err = s.Delete(gvr, "default", "obj-2")
			require.NoError(t, err)
			_, err = s.Create(gvr, "other", "obj-9", nil)
			require.NoError(t, err)
			requireConverges(t, s, gvr, store)

			obj, ok, err := store.GetByKey("default/obj-1")
			require.NoError(t, err)
			require.True(t, ok)
			data, _, _ := unstructured.NestedStringMap(obj.(*unstructured.Unstructured).Object, "data")
			require.Equal(t, "updated", data["i"])
			if tc.watchList {
				// the streaming list is a WATCH ending in the
				// initial-events-end bookmark; no LIST at all.
				require.EqualValues(t, 0, c.lists.Load())
				require.EqualValues(t, 1, c.watches.Load())
			} else {
				require.EqualValues(t, 1, c.lists.Load(), "one LIST, then only the watch")
			}
		})
	}
}

// DropWatches ends every stream (like an apiserver restart); the Reflector
// opens a new watch and catches up on what it missed.
func TestDropWatchesMakesReflectorRewatch(t *testing.T) {
	s, u, c := startSim(t, Options{})
	_, err := s.Create(ConfigMaps, "default", "a", nil)
	require.NoError(t, err)
	store := runReflector(t, dynamicClient(t, u), ConfigMaps, false)
	requireConverges(t, s, ConfigMaps, store)
	eventually(t, func() bool { return c.watches.Load() == 1 }, "first watch")

	s.DropWatches()
	_, err = s.Create(ConfigMaps, "default", "b", nil)
	require.NoError(t, err)
	eventually(t, func() bool { return c.watches.Load() >= 2 }, "reflector re-watch")
	requireConverges(t, s, ConfigMaps, store)
}

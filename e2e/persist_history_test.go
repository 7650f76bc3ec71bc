package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/persist"
)

// docs/semantics.md "Persisted cache", "The guarantee": a kube-apiserver whose cluster is
// deleted and created again at the same address — etcd wiped, the same names written anew (a
// quarter of them replaced by others in one case), its resourceVersion below, at or past the
// snapshot's, its history kept or compacted — never has a reflector restarted from the old
// cluster's snapshot say synced with an object, uid or resourceVersion that is not the new
// cluster's, whichever way the start goes: the probe's page holding the whole collection, the
// probe's item or the verification contradicting the snapshot, or the compacted history
// leaving it unverifiable.
func TestAnotherClusterAtTheSameAddressIsNeverSynced(t *testing.T) {
	apiserver.SkipUnlessOptedIn(t, "needs a real kube-apiserver and etcd")
	rb, err := testbackend.StartRealWithin(20*time.Minute, apiserver.Options{})
	if err != nil {
		testbackend.Unavailable(t, err)
	}
	t.Cleanup(rb.Server.Stop)
	ctx := context.Background()
	const objects = 300
	names := func(replaced int) []string {
		var out []string
		for i := range objects {
			if i >= objects-replaced {
				out = append(out, fmt.Sprintf("other-%04d", i))
			} else {
				out = append(out, fmt.Sprintf("cm-%04d", i))
			}
		}
		return out
	}
	rv := func() uint64 {
		n, err := rb.Server.Revision(ctx)
		require.NoError(t, err)
		return uint64(n)
	}
	// fill writes one ConfigMap of another namespace until etcd's revision reaches target.
	fill := func(target uint64) {
		require.NoError(t, rb.EnsureNamespace(ctx, "filler"))
		for i := 0; rv() < target; i++ {
			require.NoError(t, rb.Put(ctx, configMaps, "filler", "filler", strconv.Itoa(i)))
		}
	}

	for _, c := range []struct {
		name string
		// place says where the new cluster's resourceVersion is against the snapshot's S when
		// the reflector restarts: below it, at it (within the writes of kube-apiserver's own
		// leases), or past it.
		place    string
		compact  bool
		replaced int
		pageSize int64
		way      []rewatch.StartWay
	}{
		{"below the snapshot's RV", "below", false, 0, 50, []rewatch.StartWay{rewatch.StartSnapshotAhead}},
		{"at the snapshot's RV, a quarter of the names replaced", "at", false, objects / 4, 50,
			[]rewatch.StartWay{rewatch.StartSnapshotForeign, rewatch.StartSnapshotAhead}},
		{"past the snapshot's RV", "above", false, 0, 50, []rewatch.StartWay{rewatch.StartSnapshotForeign}},
		{"past the snapshot's RV, compacted", "above", true, 0, 50,
			[]rewatch.StartWay{rewatch.StartSnapshotForeign, rewatch.StartSnapshotUnverifiable}},
		{"past the snapshot's RV, the whole collection in the probe", "above", false, 0, 0, []rewatch.StartWay{rewatch.StartProbedWhole}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, rb, configMaps, 0)
			for _, n := range names(0) {
				require.NoError(t, rb.Put(ctx, configMaps, e.ns, n, "old"))
			}
			if c.place == "below" {
				// The old cluster had a longer life than the new one will have had.
				fill(rv() + 2*objects + 500)
			}
			dir := filepath.Join(t.TempDir(), "cache")
			pages := func(cfg *rewatch.Config) {
				cfg.Persist = persist.Dir(dir)
				if c.pageSize > 0 {
					cfg.Policy.PageSize = c.pageSize
				}
			}
			e.start(pages)
			e.converged()
			e.stop()
			snapRV, err := strconv.ParseUint(e.r.Stats().LastResourceVersion, 10, 64)
			require.NoError(t, err)

			require.NoError(t, rb.RecreateCluster(ctx))
			require.NoError(t, rb.EnsureNamespace(ctx, e.ns))
			for _, n := range names(c.replaced) {
				require.NoError(t, rb.Put(ctx, configMaps, e.ns, n, "new"))
			}
			switch c.place {
			case "below":
				require.Less(t, rv(), snapRV, "the new cluster is younger than the snapshot")
			case "at":
				fill(snapRV)
			case "above":
				fill(snapRV + 200)
			}
			if c.compact {
				require.NoError(t, rb.ExpireHistory(ctx))
			}
			t.Logf("snapshot at rv %d, the new cluster at %d", snapRV, rv())

			// The store as the reflector first says it is synced, names to "rv uid".
			var mu sync.Mutex
			var atSync map[string]string
			e.store = driver.NewMemStore()
			e.start(func(cfg *rewatch.Config) {
				pages(cfg)
				record := cfg.OnTransition
				cfg.OnTransition = func(tr driver.Transition) {
					record(tr)
					mu.Lock()
					defer mu.Unlock()
					if tr.Snapshot.Synced && atSync == nil && tr.Err == nil {
						atSync = storeObjects(e.store)
					}
				}
			})
			e.converged()
			e.stop()
			server := serverObjects(t, rb, e.ns)
			mu.Lock()
			defer mu.Unlock()
			require.NotNil(t, atSync)
			assert.Equal(t, server, atSync, "synced with objects that are not the new cluster's:\n%s", e.describe())
			st := e.r.Stats().Start
			assert.Contains(t, c.way, st.Way, "%s", st)
			e.report("another cluster at the same address, "+c.name, st.String())
		})
	}
}

// storeObjects maps the store's objects to "resourceVersion uid".
func storeObjects(store *driver.MemStore) map[string]string {
	out := map[string]string{}
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion() + " " + string(m.GetUID())
		}
	}
	return out
}

// serverObjects is storeObjects of the server's ConfigMaps in ns.
func serverObjects(t *testing.T, rb *testbackend.Real, ns string) map[string]string {
	l, err := rb.Clientset().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion + " " + string(cm.UID)
	}
	return out
}

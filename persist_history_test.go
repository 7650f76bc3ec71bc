package rewatch_test

import (
	"fmt"
	"maps"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/sim"
)

// sameAddress is one address in front of whichever server it is pointed at: a cluster
// deleted and created again at the address its clients know (minikube's, kind's on a fixed
// port, an in-cluster service address).
type sameAddress struct {
	*httptest.Server
	upstream atomic.Pointer[url.URL]
}

func newSameAddress(t *testing.T) *sameAddress {
	a := &sameAddress{}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(a.upstream.Load()) },
		FlushInterval: -1,
	}
	a.Server = httptest.NewServer(proxy)
	t.Cleanup(a.Close)
	return a
}

// cluster starts a simulated cluster of the given incarnation with ConfigMaps of the given
// names and points the address at it.
func (a *sameAddress) cluster(t *testing.T, incarnation uint16, names ...string) *sim.Server {
	s, u := simWithConfigMaps(t, sim.Options{Incarnation: incarnation}, names...)
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	a.upstream.Store(parsed)
	return s
}

// simWithConfigMaps starts a simulated server of opts, closed at the test's end, holding a
// ConfigMap of each name in "default" (its data: n=name), and returns it with its URL.
func simWithConfigMaps(t *testing.T, opts sim.Options, names ...string) (*sim.Server, string) {
	t.Helper()
	s := sim.New(opts)
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	for _, n := range names {
		_, err := s.Create(sim.ConfigMaps, "default", n, map[string]string{"n": n})
		require.NoError(t, err)
	}
	return s, u
}

// holdsExactly says whether store holds s's ConfigMaps: the same names, resourceVersions and
// uids — not merely the same names and resourceVersions, which another cluster can share.
func holdsExactly(s *sim.Server, store *driver.MemStore) bool {
	if !maps.Equal(store.Versions(), s.Snapshot(sim.ConfigMaps)) {
		return false
	}
	uids := s.UIDs(sim.ConfigMaps)
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err != nil || string(m.GetUID()) != uids[m.GetNamespace()+"/"+m.GetName()] {
			return false
		}
	}
	return true
}

// docs/semantics.md "Persisted cache", the probe of a small collection: a probe's page that
// holds the whole collection is a full state at once, at a consistent resourceVersion. The
// restart is synced after that one request; the items the snapshot holds unchanged are not
// decoded (the snapshot's objects are used), and the watch goes on from the page's
// resourceVersion.
func TestASmallCollectionIsSyncedByTheProbe(t *testing.T) {
	s, u := simWithConfigMaps(t, sim.Options{}, "a", "b", "c", "d")
	dir := filepath.Join(t.TempDir(), "cache")
	exactly := func(_ *rewatch.Reflector, st *driver.MemStore) bool { return holdsExactly(s, st) }
	persisted(t, u, dir, exactly)

	_, err := s.Update(sim.ConfigMaps, "default", "a", map[string]string{"n": "a2"})
	require.NoError(t, err)
	_, err = s.Delete(sim.ConfigMaps, "default", "b")
	require.NoError(t, err)
	r, _ := persisted(t, u, dir, exactly)
	st := r.Stats()
	require.Equal(t, rewatch.StartProbedWhole, st.Start.Way, "%s", st.Start)
	assert.Equal(t, 3, st.Start.Listed)
	assert.Equal(t, 1, st.Start.Decoded, "only a changed: %s", st.Start)
	assert.Equal(t, 1, st.Lists, "one LIST: the probe")
	assert.Equal(t, 1, st.ListPages)
}

// docs/semantics.md "Persisted cache", another history: a cluster deleted and created again at
// the same address, with the same names and resourceVersions at or past the snapshot's, is not
// restored as synced, whichever way the start goes — the probe's page holds the whole
// collection, the probe's item contradicts the snapshot, the verification at the snapshot's
// resourceVersion does, or the new cluster has compacted that resourceVersion away. The store
// ends with the new cluster's objects, uids included.
func TestAnotherClusterAtTheSameAddressIsNotRestored(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for _, c := range []struct {
		name string
		// newCluster makes the cluster the address leads to after the restart.
		newCluster func(t *testing.T, a *sameAddress) *sim.Server
		pageSize   int64
		way        rewatch.StartWay
		lists      int
	}{
		{"whole collection in the probe", func(t *testing.T, a *sameAddress) *sim.Server {
			return a.cluster(t, 2, names...)
		}, 0, rewatch.StartProbedWhole, 1},
		{"the probe's item contradicts", func(t *testing.T, a *sameAddress) *sim.Server {
			s := a.cluster(t, 2, names...)
			// A few more writes: its resourceVersion passes the snapshot's.
			for i := range 3 {
				_, err := s.Update(sim.ConfigMaps, "default", "d", map[string]string{"n": fmt.Sprint(i)})
				require.NoError(t, err)
			}
			return s
		}, 2, rewatch.StartSnapshotForeign, 2},
		{"the verification contradicts", func(t *testing.T, a *sameAddress) *sim.Server {
			s := a.cluster(t, 2, names...)
			// "a", the probe's item, changed after the snapshot's resourceVersion: it says
			// nothing, and the collection as it was at that resourceVersion is asked for.
			for i := range 3 {
				_, err := s.Update(sim.ConfigMaps, "default", "a", map[string]string{"n": fmt.Sprint(i)})
				require.NoError(t, err)
			}
			return s
		}, 2, rewatch.StartSnapshotForeign, 3},
		{"compacted past the snapshot", func(t *testing.T, a *sameAddress) *sim.Server {
			s := a.cluster(t, 2, names...)
			for i := range 3 {
				_, err := s.Update(sim.ConfigMaps, "default", "a", map[string]string{"n": fmt.Sprint(i)})
				require.NoError(t, err)
			}
			s.Compact()
			return s
		}, 2, rewatch.StartSnapshotUnverifiable, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newSameAddress(t)
			old := a.cluster(t, 1, names...)
			dir := filepath.Join(t.TempDir(), "cache")
			pages := func(cfg *rewatch.Config) { cfg.Policy.PageSize = c.pageSize }
			persisted(t, a.URL, dir, func(_ *rewatch.Reflector, st *driver.MemStore) bool { return holdsExactly(old, st) }, pages)

			now := c.newCluster(t, a)
			var syncedWith bool
			r, store := persisted(t, a.URL, dir, func(r *rewatch.Reflector, st *driver.MemStore) bool {
				// The first time it says synced, the store holds the new cluster's objects.
				syncedWith = holdsExactly(now, st)
				return true
			}, pages)
			assert.True(t, syncedWith, "synced with another cluster's objects: %v", store.Versions())
			assert.True(t, holdsExactly(now, store))
			st := r.Stats()
			assert.Equal(t, c.way, st.Start.Way, "%s", st.Start)
			assert.Equal(t, c.lists, st.Lists, "%s", st.Start)
		})
	}
}

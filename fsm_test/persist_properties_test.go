package fsm_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// docs/semantics.md "Persisted cache": a reflector restarted from the snapshot its previous run
// saved at stop — after random writes, with the server's history compacted or not, with the
// snapshot's RV pushed ahead of the server (a restored etcd), or with another cluster behind the
// same URL (random names and writes: its resourceVersions below, at or past the snapshot's) —
// converges to the server's state and is never synced before its store holds it, names,
// resourceVersions and uids: nothing is written while it runs, so a store synced with anything
// else is stale. A snapshot is restored only when it is of the server's history (or empty, as
// the other history was at its resourceVersion) and not ahead of it; one that is, in a
// collection larger than the probe's page and not compacted, is restored (no LIST of
// everything).
func TestPropertyARestartFromASnapshotConverges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		front := newFront(rt)
		defer front.Close()
		s := front.cluster(rt, 1)
		applyOps(rt, s, "before")
		pageSize := rapid.SampledFrom([]int64{1, 2, 3, 500}).Draw(rt, "pageSize")

		var mu sync.Mutex
		var savedRV string
		var saved []any
		persistence := &driver.Persistence{Save: func(_ context.Context, rv string, items []any) error {
			mu.Lock()
			defer mu.Unlock()
			savedRV, saved = rv, items
			return nil
		}}
		first := runReflector(rt, front.URL, pageSize, persistence, nil)
		first.waitSynced(rt, s)
		first.stop(rt)
		mu.Lock()
		rv, items := savedRV, saved
		mu.Unlock()
		require.NotEmpty(rt, rv, "the stop saved the store")

		compacted, ahead, foreign := false, false, false
		switch rapid.IntRange(0, 4).Draw(rt, "history") {
		case 0:
			// Another cluster at the same URL: the same names, written anew.
			foreign = true
			s = front.cluster(rt, 2)
			applyOps(rt, s, "another")
		case 1:
			ahead = true
			n, err := strconv.ParseUint(s.CurrentRV(), 10, 64)
			require.NoError(rt, err)
			rv = strconv.FormatUint(n+100, 10)
		}
		applyOps(rt, s, "after")
		if rapid.Bool().Draw(rt, "compact") {
			compacted = true
			s.Compact()
		}
		persistence.Load = func(context.Context) (string, []any, error) { return rv, items, nil }

		second := runReflector(rt, front.URL, pageSize, persistence, s)
		second.waitSynced(rt, s)
		second.stop(rt)
		second.mu.Lock()
		defer second.mu.Unlock()
		require.Empty(rt, second.stale, "synced with a store unlike the server's")
		if second.restored {
			// An empty snapshot is the other cluster's state too when that held nothing at the
			// snapshot's resourceVersion: restoring it and watching from there is exact.
			require.False(rt, foreign && len(items) > 0, "another cluster's snapshot was restored")
			require.False(rt, ahead, "a snapshot ahead of the server was restored")
		}
		// The probe asks for a page when the snapshot held no more than one, else for one item;
		// a page that holds the whole collection is a full state, and no restore is needed.
		probeLimit := int64(1)
		if int64(len(items)) <= pageSize {
			probeLimit = pageSize
		}
		whole := int64(len(s.Snapshot(sim.ConfigMaps))) <= probeLimit
		if !foreign && !ahead && !compacted && !whole {
			require.True(rt, second.restored, "a snapshot of the server's history, in a collection larger than a page, is restored")
		}
	})
}

// front is one URL in front of whichever simulated cluster it is pointed at: a cluster
// deleted and created again at the address its clients know.
type front struct {
	*httptest.Server
	upstream atomic.Pointer[url.URL]
	servers  []*sim.Server
}

func newFront(rt *rapid.T) *front {
	f := &front{}
	f.Server = httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(f.upstream.Load()) },
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
	})
	return f
}

// cluster starts a simulated cluster of the given incarnation (its own uids) and points the
// front at it.
func (f *front) cluster(rt *rapid.T, incarnation uint16) *sim.Server {
	s := sim.New(sim.Options{BookmarkInterval: time.Hour, Incarnation: incarnation})
	u, err := s.Start()
	require.NoError(rt, err)
	parsed, err := url.Parse(u)
	require.NoError(rt, err)
	f.servers = append(f.servers, s)
	f.upstream.Store(parsed)
	return s
}

func (f *front) Close() {
	f.Server.Close()
	for _, s := range f.servers {
		s.Close()
	}
}

// restartRun is one reflector of the property, over the simulator.
type restartRun struct {
	store  *driver.MemStore
	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	synced   bool
	restored bool
	// stale holds what the store held, against the server, when the reflector first said it
	// was synced, if that was not the server's state.
	stale []map[string]string
}

// runReflector runs a reflector of the simulator's ns/ConfigMaps with persistence; with s, it
// checks the store against s's state when the reflector first says it is synced.
func runReflector(rt *rapid.T, url string, pageSize int64, p *driver.Persistence, s *sim.Server) *restartRun {
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: url,
		Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "ns"}})
	require.NoError(rt, err)
	r := &restartRun{store: driver.NewMemStore(), done: make(chan error, 1)}
	cfg := driver.Config{
		Policy: transitions.Config{Seed: 3, PageSize: pageSize}, Transport: tr, Store: r.store, Checked: true,
		Persistence: p, Logger: slog.New(slog.DiscardHandler),
		Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) {
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, c := range t.Commands {
				r.restored = r.restored || c.Kind == fsm.CmdRestore
			}
			if t.Snapshot.Synced && !r.synced && t.Err == nil {
				r.synced = true
				if s != nil {
					if got, want := storeState(r.store), serverState(s); !maps.Equal(got, want) {
						r.stale = append(r.stale, got, want)
					}
				}
			}
		})},
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- driver.Run(ctx, cfg) }()
	return r
}

func (r *restartRun) waitSynced(rt *rapid.T, s *sim.Server) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.mu.Lock()
		synced := r.synced
		r.mu.Unlock()
		if synced && maps.Equal(storeState(r.store), serverState(s)) {
			return
		}
		if time.Now().After(deadline) {
			rt.Fatalf("the store never matched the server: %v, server %v", storeState(r.store), serverState(s))
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *restartRun) stop(rt *rapid.T) {
	r.cancel()
	require.NoError(rt, <-r.done)
}

// serverState maps each of the server's ConfigMaps to its resourceVersion and uid: another
// cluster may hold the same names at the same resourceVersions, never with the same uids.
func serverState(s *sim.Server) map[string]string {
	out := s.Snapshot(sim.ConfigMaps)
	for k, uid := range s.UIDs(sim.ConfigMaps) {
		out[k] += " " + uid
	}
	return out
}

// storeState is serverState of what the store holds.
func storeState(store *driver.MemStore) map[string]string {
	out := map[string]string{}
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue
		}
		key := m.GetName()
		if ns := m.GetNamespace(); ns != "" {
			key = ns + "/" + key
		}
		out[key] = m.GetResourceVersion() + " " + string(m.GetUID())
	}
	return out
}

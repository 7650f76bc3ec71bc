package fsm_test

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// docs/semantics.md "Persisted cache": a reflector restarted from the snapshot its previous run
// saved at stop — after random writes, with the server's history compacted or not, or with
// the snapshot's RV pushed ahead of the server (a restored etcd) — converges to the server's
// state, restores only a snapshot that is not ahead of the probe, and is never synced before
// its store holds the server's state: nothing is written while it runs, so a store synced
// with anything else is stale.
func TestPropertyARestartFromASnapshotConverges(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := sim.New(sim.Options{BookmarkInterval: time.Hour})
		url, err := s.Start()
		require.NoError(rt, err)
		defer s.Close()
		applyOps(rt, s, "before")

		var mu sync.Mutex
		var savedRV string
		var saved []any
		persistence := &driver.Persistence{Save: func(_ context.Context, rv string, items []any) error {
			mu.Lock()
			defer mu.Unlock()
			savedRV, saved = rv, items
			return nil
		}}
		first := runReflector(rt, url, persistence, nil)
		first.waitSynced(rt, s)
		first.stop(rt)
		mu.Lock()
		rv, items := savedRV, saved
		mu.Unlock()
		require.NotEmpty(rt, rv, "the stop saved the store")

		applyOps(rt, s, "after")
		if rapid.Bool().Draw(rt, "compact") {
			s.Compact()
		}
		ahead := rapid.IntRange(0, 4).Draw(rt, "ahead") == 0
		if ahead {
			n, err := strconv.ParseUint(s.CurrentRV(), 10, 64)
			require.NoError(rt, err)
			rv = strconv.FormatUint(n+100, 10)
		}
		persistence.Load = func(context.Context) (string, []any, error) { return rv, items, nil }

		second := runReflector(rt, url, persistence, s)
		second.waitSynced(rt, s)
		second.stop(rt)
		second.mu.Lock()
		defer second.mu.Unlock()
		require.Empty(rt, second.stale, "synced with a store unlike the server's")
		require.Equal(rt, !ahead, second.restored, "a snapshot is restored exactly when it is not ahead of the server")
	})
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
func runReflector(rt *rapid.T, url string, p *driver.Persistence, s *sim.Server) *restartRun {
	tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: url,
		Resource: httpapi.Resource{Version: "v1", Resource: "configmaps", Namespace: "ns"}})
	require.NoError(rt, err)
	r := &restartRun{store: driver.NewMemStore(), done: make(chan error, 1)}
	cfg := driver.Config{
		Policy: transitions.Config{Seed: 3}, Transport: tr, Store: r.store, Checked: true,
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
					if got, want := r.store.Versions(), s.Snapshot(sim.ConfigMaps); !sameVersions(got, want) {
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
		if synced && sameVersions(r.store.Versions(), s.Snapshot(sim.ConfigMaps)) {
			return
		}
		if time.Now().After(deadline) {
			rt.Fatalf("the store never matched the server: %v, server %v", r.store.Versions(), s.Snapshot(sim.ConfigMaps))
		}
		time.Sleep(time.Millisecond)
	}
}

func (r *restartRun) stop(rt *rapid.T) {
	r.cancel()
	require.NoError(rt, <-r.done)
}

func sameVersions(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

package driver_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// A store without List cannot be saved: the configuration says so before anything runs.
func TestPersistenceNeedsAStoreThatLists(t *testing.T) {
	save := func(context.Context, string, []any) error { return nil }
	err := driver.Config{Transport: nopTransport{}, Store: addOnlyStore{}, Persistence: &driver.Persistence{Save: save}}.Validate()
	require.ErrorContains(t, err, "has no List() []any")
	require.NoError(t, driver.Config{Transport: nopTransport{}, Store: addOnlyStore{}, Persistence: &driver.Persistence{
		Load: func(context.Context) (string, []any, error) { return "", nil, nil }}}.Validate(), "loading needs no List")
	require.NoError(t, driver.Config{Transport: nopTransport{}, Persistence: &driver.Persistence{Save: save}}.Validate(), "the default MemStore lists")
	err = driver.Config{Transport: nopTransport{}, Persistence: &driver.Persistence{Save: save, Period: -time.Second}}.Validate()
	require.ErrorContains(t, err, "Period must not be negative")
}

// docs/semantics.md "Persisted cache": a reflector stopped saves its store; one started from
// that snapshot after the server changed probes with one item of a consistent LIST (the
// collection is larger than a page: pages of 2 here), which is as the snapshot holds it and so
// witnesses its history, restores it, resumes the watch from the snapshot's RV and catches up
// from the events since — no LIST of everything — and its store ends equal to the server's.
func TestRestartResumesFromThePersistedStore(t *testing.T) {
	eachTransport(t, func(t *testing.T, kind transportKind) {
		w := newWorld(t, kind, 5)
		var snap heldSnapshot
		w.run(func(c *driver.Config, _ *httpapi.Config) {
			c.Persistence, c.Policy.PageSize = &driver.Persistence{Save: snap.save}, 2
		})
		w.synced()
		require.NoError(t, w.stop())
		rv, saved, _ := snap.load(context.Background())
		require.NotEmpty(t, rv, "the stop saved the store")
		require.Len(t, saved, 5)

		_, err := w.sim.Update(sim.ConfigMaps, "default", "cm-2", map[string]string{"x": "2"})
		require.NoError(t, err)
		_, err = w.sim.Delete(sim.ConfigMaps, "default", "cm-1")
		require.NoError(t, err)
		_, err = w.sim.Create(sim.ConfigMaps, "default", "new", map[string]string{"x": "1"})
		require.NoError(t, err)

		w.store = driver.NewMemStore()
		w.mu.Lock()
		w.transitions = nil
		w.mu.Unlock()
		listsBefore, _ := w.proxy.Counts()
		w.run(func(c *driver.Config, _ *httpapi.Config) {
			c.Store, c.Persistence, c.Policy.PageSize = w.store, &driver.Persistence{Load: snap.load, Save: snap.save}, 2
		})
		w.synced()
		require.Eventually(t, func() bool {
			w.mu.Lock()
			defer w.mu.Unlock()
			n := len(w.transitions)
			return n > 0 && w.transitions[n-1].Snapshot.Synced
		}, 10*time.Second, 2*time.Millisecond, "the restored store never synced")
		lists, _ := w.proxy.Counts()
		assert.Equal(t, 1, lists-listsBefore, "one LIST: the probe")
		causes := w.causes()
		assert.Contains(t, causes, fsm.CauseResume)
		w.mu.Lock()
		for _, tr := range w.transitions {
			for _, c := range tr.Commands {
				if c.Kind == fsm.CmdListPage {
					assert.EqualValues(t, 1, c.Limit, "the only LIST is the probe: %s", c)
				}
			}
		}
		w.mu.Unlock()
		require.NoError(t, w.stop())
		_, saved, _ = snap.load(context.Background())
		assert.Len(t, saved, 5, "the second stop saved the store it caught up")
	})
}

// A snapshot the load refuses is a plain start: one LIST of everything.
func TestARefusedSnapshotStartsAsUsual(t *testing.T) {
	w := newWorld(t, viaHTTP, 3)
	w.run(func(c *driver.Config, _ *httpapi.Config) {
		c.Persistence = &driver.Persistence{Load: func(context.Context) (string, []any, error) {
			return "", nil, errors.New("checksum mismatch")
		}}
	})
	w.synced()
	w.mu.Lock()
	start := w.transitions[0].Event
	w.mu.Unlock()
	assert.Equal(t, "checksum mismatch", start.Refused)
	assert.Equal(t, fsm.CauseStart, w.causes()[0])
}

type addOnlyStore struct{}

func (addOnlyStore) Add(any) error               { return nil }
func (addOnlyStore) Update(any) error            { return nil }
func (addOnlyStore) Delete(any) error            { return nil }
func (addOnlyStore) Replace([]any, string) error { return nil }

type nopTransport struct{}

func (nopTransport) List(context.Context, fsm.Command, func(fsm.Event) bool)  {}
func (nopTransport) Watch(context.Context, fsm.Command, func(fsm.Event) bool) {}
func (nopTransport) String() string                                           { return "nop" }

// A stop before the start is no refusal of the snapshot: the load that the stop cut short is
// neither logged nor carried by the start.
func TestALoadCutShortByTheStopRefusesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var start fsm.Event
	err := driver.Run(ctx, driver.Config{Transport: nopTransport{},
		Persistence: &driver.Persistence{Load: func(ctx context.Context) (string, []any, error) {
			cancel()
			return "", nil, ctx.Err()
		}},
		Observers: []driver.Observer{driver.ObserverFunc(func(tr driver.Transition) {
			if tr.Event.Kind == fsm.EvStart {
				start = tr.Event
			}
		})},
	})
	require.NoError(t, err)
	assert.Equal(t, fsm.EvStart, start.Kind)
	assert.Empty(t, start.Refused)
}

// The machine's letting go of a loaded snapshot unrestored — here one ahead of the server — is
// told to the Persistence (Dropped), so that a store shared with other writers may replace
// it; a snapshot restored is not dropped.
func TestADroppedSnapshotIsToldToThePersistence(t *testing.T) {
	for name, c := range map[string]struct {
		rv      string
		dropped int
	}{"ahead": {"999999999", 1}, "restored": {"", 0}} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, viaHTTP, 3)
			var snap heldSnapshot
			w.run(func(c *driver.Config, _ *httpapi.Config) {
				c.Persistence, c.Policy.PageSize = &driver.Persistence{Save: snap.save}, 2
			})
			w.synced()
			require.NoError(t, w.stop())
			if c.rv != "" {
				snap.rv = c.rv
			}
			var dropped int
			w.store = driver.NewMemStore()
			w.run(func(cfg *driver.Config, _ *httpapi.Config) {
				cfg.Store, cfg.Policy.PageSize = w.store, 2
				cfg.Persistence = &driver.Persistence{
					Load:    snap.load,
					Dropped: func() { dropped++ },
				}
			})
			w.synced()
			require.NoError(t, w.stop())
			assert.Equal(t, c.dropped, dropped)
		})
	}
}

// heldSnapshot is a Persistence's snapshot kept in memory: what the last save wrote, what a
// load reads.
type heldSnapshot struct {
	mu    sync.Mutex
	rv    string
	items []any
}

func (h *heldSnapshot) save(_ context.Context, rv string, items []any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rv, h.items = rv, items
	return nil
}

func (h *heldSnapshot) load(context.Context) (string, []any, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rv, h.items, nil
}

package driver_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// resyncingStore is a MemStore with client-go's Resync, counted.
type resyncingStore struct {
	*driver.MemStore
	resyncs atomic.Int64
}

func (s *resyncingStore) Resync() error { s.resyncs.Add(1); return nil }

// relistTransport answers every LIST at once; its first watch stays open until told to end
// with a 410, later ones stay open.
type relistTransport struct {
	lists atomic.Int64
	// second is closed when the second LIST begins, which then waits for holdSecond.
	second, holdSecond chan struct{}
	expire             chan struct{}
}

func (r *relistTransport) String() string { return "relist" }

func (r *relistTransport) List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	if r.lists.Add(1) == 2 {
		close(r.second)
		select {
		case <-r.holdSecond:
		case <-ctx.Done():
			return
		}
	}
	emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: "10"})
}

func (r *relistTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	select {
	case <-r.expire:
		emit(fsm.Event{Kind: fsm.EvWatchError, Request: c.Request, Failure: &fsm.Failure{Status: &metav1.Status{
			Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "the resourceVersion has expired"}}})
	case <-ctx.Done():
	}
}

// The store's Resync is called every ResyncPeriod on the driver's clock, counted from the full
// state reaching the store; while a relist is under way no resync is made, and the period
// starts again once the relist's state is in the store (docs/semantics.md, "Stores").
func TestResyncPeriodOnTheClock(t *testing.T) {
	const period = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := clockx.NewMock(time.Unix(1000, 0))
	tr := &relistTransport{second: make(chan struct{}), holdSecond: make(chan struct{}), expire: make(chan struct{}, 1)}
	store := &resyncingStore{MemStore: driver.NewMemStore()}
	states := make(chan fsm.State, 64)
	done := make(chan error, 1)
	go func() {
		done <- driver.Run(ctx, driver.Config{Transport: tr, Store: store, Clock: clock, Logger: slog.New(slog.DiscardHandler),
			ResyncPeriod: period, Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) { states <- t.To })}})
	}()
	await := func(want fsm.State) {
		t.Helper()
		for s := range states {
			if s == want {
				return
			}
		}
	}
	await(fsm.Watching)
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	require.Equal(t, []time.Duration{period}, clock.ArmedDurations())
	clock.Add(period - time.Nanosecond)
	require.Zero(t, store.resyncs.Load())
	clock.Add(time.Nanosecond)
	require.NoError(t, clock.WaitForTimers(ctx, 1)) // the next period, armed after the resync
	require.EqualValues(t, 1, store.resyncs.Load())
	require.Equal(t, []time.Duration{period}, clock.ArmedDurations())

	// A 410: the reflector relists, and the LIST is held while the period passes.
	tr.expire <- struct{}{}
	await(fsm.Relisting)
	<-tr.second
	clock.Add(period) // the period ends while the relist's LIST is held
	close(tr.holdSecond)
	await(fsm.Watching)
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	require.Equal(t, []time.Duration{period}, clock.ArmedDurations(), "the period did not start again from the relist's state")
	require.EqualValues(t, 1, store.resyncs.Load(), "a resync during a relist")
	clock.Add(period)
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	require.EqualValues(t, 2, store.resyncs.Load())
	cancel()
	require.NoError(t, <-done)
}

// catchUpTransport answers the probe of a start from a snapshot at RV 20, and opens the watch,
// which delivers a bookmark at RV 20 when told to.
type catchUpTransport struct{ bookmark chan struct{} }

func (catchUpTransport) String() string { return "catch-up" }

// List answers the probe with the snapshot's one object as it holds it, which witnesses the
// snapshot's history, on a page with more to come.
func (catchUpTransport) List(_ context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "5"}}
	if emit(fsm.Event{Kind: fsm.EvListItem, Request: c.Request, Key: "ns/a", ResourceVersion: "5", Object: obj}) {
		emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: "20", Continue: "c1"})
	}
}

func (r catchUpTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	select {
	case <-r.bookmark:
		emit(fsm.Event{Kind: fsm.EvWatchEvent, Request: c.Request, Type: fsm.Bookmark, ResourceVersion: "20"})
	case <-ctx.Done():
		return
	}
	<-ctx.Done()
}

// A store restored from a persisted snapshot is resynced only once it is synced: its period
// starts when the watch has caught up (docs/semantics.md, "Stores", "Persisted cache").
func TestResyncPeriodStartsWhenARestoredStoreCatchesUp(t *testing.T) {
	const period = 30 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clock := clockx.NewMock(time.Unix(1000, 0))
	tr := catchUpTransport{bookmark: make(chan struct{})}
	store := &resyncingStore{MemStore: driver.NewMemStore()}
	synced := make(chan bool, 64)
	done := make(chan error, 1)
	load := func(context.Context) (string, []any, error) {
		return "10", []any{&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "5"}}}, nil
	}
	go func() {
		done <- driver.Run(ctx, driver.Config{Transport: tr, Store: store, Clock: clock, Logger: slog.New(slog.DiscardHandler),
			ResyncPeriod: period, Persistence: &driver.Persistence{Load: load},
			Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) {
				if t.Cause == fsm.CauseWatchOpened || t.Snapshot.Synced {
					synced <- t.Snapshot.Synced
				}
			})}})
	}()
	require.False(t, <-synced, "the watch opened before the store caught up")
	require.Equal(t, 1, store.Len(), "the snapshot was restored")
	require.Empty(t, clock.ArmedDurations(), "no resync period while the restored store catches up")
	close(tr.bookmark)
	require.True(t, <-synced)
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	require.Equal(t, []time.Duration{period}, clock.ArmedDurations())
	clock.Add(period)
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	require.EqualValues(t, 1, store.resyncs.Load())
	cancel()
	require.NoError(t, <-done)
}

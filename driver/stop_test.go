package driver_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
)

// burstTransport lists nothing, then delivers a burst of ADDED events on its watch and stops
// the reflector right after, while the store is still busy with the first of them.
type burstTransport struct {
	n      int
	cancel context.CancelFunc
	// busy is closed by the store's first Add, which waits on release.
	busy, release chan struct{}
}

func (b *burstTransport) String() string { return "burst" }

func (b *burstTransport) List(_ context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: "1"})
}

func (b *burstTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	for i := range b.n {
		rv := fmt.Sprint(2 + i)
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("o", i), ResourceVersion: rv}}
		if !emit(fsm.Event{Kind: fsm.EvWatchEvent, Request: c.Request, Type: fsm.Added, Key: "ns/" + obj.Name, ResourceVersion: rv, Object: obj}) {
			return
		}
		if i == 0 {
			<-b.busy
		}
	}
	b.cancel() // every event has been read and handed over; now the stop
	close(b.release)
	<-ctx.Done()
}

// blockingStore is a MemStore whose first Add waits until the transport has read everything.
type blockingStore struct {
	*driver.MemStore
	t     *burstTransport
	first bool
}

func (s *blockingStore) Add(obj any) error {
	if !s.first {
		s.first = true
		close(s.t.busy)
		<-s.t.release
	}
	return s.MemStore.Add(obj)
}

// Events the transport had read when the reflector was stopped are applied before it stops, as
// client-go's reflector applies an event it has read (docs/semantics.md, "Stores").
func TestEventsReadBeforeAStopAreApplied(t *testing.T) {
	const n = 200
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &burstTransport{n: n, cancel: cancel, busy: make(chan struct{}), release: make(chan struct{})}
	store := &blockingStore{MemStore: driver.NewMemStore(), t: tr}
	var last fsm.State
	err := driver.Run(ctx, driver.Config{Transport: tr, Store: store, Logger: slog.New(slog.DiscardHandler),
		Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) { last = t.To })}})
	require.NoError(t, err)
	require.Equal(t, n, store.Len(), "events read before the stop were dropped")
	require.Equal(t, fsm.Stopped, last)
}

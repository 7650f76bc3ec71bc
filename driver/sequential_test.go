package driver_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// lingeringTransport ends its first watch with a bookmark and the stream's end, and only
// returns a while after, as a transport still closing a response body does; it notes when
// each watch began and returned.
type lingeringTransport struct {
	mu       sync.Mutex
	watches  int
	returned []time.Time
	began    []time.Time
	second   chan struct{}
}

func (l *lingeringTransport) String() string { return "lingering" }

func (l *lingeringTransport) List(_ context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: "10"})
}

func (l *lingeringTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	l.mu.Lock()
	l.watches++
	n := l.watches
	l.began = append(l.began, time.Now())
	l.mu.Unlock()
	if n > 1 {
		close(l.second)
		<-ctx.Done()
		return
	}
	emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request})
	emit(fsm.Event{Kind: fsm.EvWatchEvent, Request: c.Request, Type: fsm.Bookmark, ResourceVersion: "11"})
	emit(fsm.Event{Kind: fsm.EvWatchEnded, Request: c.Request})
	time.Sleep(200 * time.Millisecond)
	l.mu.Lock()
	l.returned = append(l.returned, time.Now())
	l.mu.Unlock()
}

// The next request begins only once the one before it has returned, so the connection the
// previous one used is idle or gone by then: a re-watch on a fresh connection can close it
// instead of reusing it, and reach another kube-apiserver behind a load balancer
// (docs/semantics.md, "Behind a load balancer").
func TestNextRequestBeginsAfterThePreviousReturned(t *testing.T) {
	tr := &lingeringTransport{second: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- driver.Run(ctx, driver.Config{Policy: transitions.Defaults(), Transport: tr, Logger: slog.New(slog.DiscardHandler)})
	}()
	select {
	case <-tr.second:
	case <-time.After(10 * time.Second):
		t.Fatal("no re-watch after the stream ended")
	}
	cancel()
	require.NoError(t, <-done)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.Len(t, tr.returned, 1)
	require.False(t, tr.began[1].Before(tr.returned[0]), "the re-watch began %v before the first watch returned", tr.returned[0].Sub(tr.began[1]))
}

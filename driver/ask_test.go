package driver_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// refusingTransport lists one empty page at RV 100, refuses the first watch with 401 once it
// has opened, and keeps every later watch open until its context ends.
type refusingTransport struct {
	mu      sync.Mutex
	watches int
	opened  chan struct{} // closed when the second watch opens
}

func (*refusingTransport) String() string { return "refusing" }

func (*refusingTransport) List(_ context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: "100"})
}

func (r *refusingTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	r.mu.Lock()
	r.watches++
	n := r.watches
	r.mu.Unlock()
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	if n == 1 {
		emit(fsm.Event{Kind: fsm.EvWatchError, Request: c.Request, Failure: &fsm.Failure{Code: 401}})
		return
	}
	if n == 2 {
		close(r.opened)
	}
	<-ctx.Done()
}

// The driver performs a CmdAsk by calling the caller's hook, and feeds its answer back: with
// a RefreshCredentials hook, a 401 to a watch calls it once and the watch is re-opened at once,
// no timer armed (docs/semantics.md, "credentials expired").
func TestAskCallsTheHookAndFeedsItsAnswer(t *testing.T) {
	tr := &refusingTransport{opened: make(chan struct{})}
	var calls int
	var mu sync.Mutex
	var causes []fsm.Cause
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- driver.Run(ctx, driver.Config{
			Policy: transitions.Config{CredentialsRefresh: true}, Transport: tr,
			Clock: clockx.NewMock(time.Unix(1_700_000_000, 0)), Logger: slog.New(slog.DiscardHandler), Checked: true,
			Hooks: map[fsm.Hook]driver.Hook{fsm.HookRefreshCredentials: driver.Acting(func(context.Context) error {
				mu.Lock()
				calls++
				mu.Unlock()
				return nil
			})},
			Observers: []driver.Observer{driver.ObserverFunc(func(t driver.Transition) {
				mu.Lock()
				causes = append(causes, t.Cause)
				mu.Unlock()
			})},
		})
	}()
	select {
	case <-tr.opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch was not re-opened after the 401")
	}
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, calls, "the hook is called once")
	require.Contains(t, causes, fsm.CauseRefreshCredentials)
	require.Contains(t, causes, fsm.CauseCredentialsRefreshed)
}

// A stop while the caller's hook runs ends the hook's context, and Run returns.
func TestStopCancelsTheHook(t *testing.T) {
	tr := &refusingTransport{opened: make(chan struct{})}
	asked := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- driver.Run(ctx, driver.Config{
			Policy: transitions.Config{CredentialsRefresh: true}, Transport: tr,
			Clock: clockx.NewMock(time.Unix(1_700_000_000, 0)), Logger: slog.New(slog.DiscardHandler),
			Hooks: map[fsm.Hook]driver.Hook{fsm.HookRefreshCredentials: driver.Acting(func(hctx context.Context) error {
				close(asked)
				<-hctx.Done()
				return hctx.Err()
			})},
		})
	}()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the hook was not called")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return: the hook's context was not ended")
	}
}

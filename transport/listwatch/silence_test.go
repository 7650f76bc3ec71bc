package listwatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/listwatch"
)

// docs/semantics.md "silent watch": a watch whose result channel stays open and delivers
// nothing for the bound is stopped and reported as a Timeout naming the silence.
func TestSilentWatchIsStopped(t *testing.T) {
	fake := watch.NewFakeWithChanSize(1, false)
	fake.Action(watch.Bookmark, cm("", "11"))
	lw := &cache.ListWatch{WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return fake, nil }}
	m := clockx.NewMock(time.Unix(0, 0))
	tr, err := listwatch.New(lw, "configmaps", listwatch.WithClock(m))
	require.NoError(t, err)

	var mu sync.Mutex
	var events []fsm.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Watch(t.Context(), fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, SilenceBound: 8 * time.Second}, func(e fsm.Event) bool {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
			return true
		})
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == 2 }, 10*time.Second, time.Millisecond)
	for ended := false; !ended; {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		if m.WaitForTimers(ctx, 1) == nil {
			m.Add(time.Second)
		}
		cancel()
		select {
		case <-done:
			ended = true
		default:
		}
	}
	require.Len(t, events, 3)
	require.Equal(t, fsm.Bookmark, events[1].Type)
	require.Equal(t, fsm.EvWatchEnded, events[2].Kind)
	require.Equal(t, fsm.Timeout, events[2].Failure.Transport)
	require.Contains(t, events[2].Failure.Message, "delivered nothing")
	require.True(t, fake.IsStopped(), "the silent watch was stopped")
	require.LessOrEqual(t, m.Now().Sub(time.Unix(0, 0)), 9*time.Second)
}

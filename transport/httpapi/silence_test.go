package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// stalling is a server whose watch sends its headers (unless noHeaders) and `events` frames,
// then holds the stream open with nothing more on it until the client goes away.
func stalling(events int, noHeaders bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !noHeaders {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			for i := range events {
				fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"%d"}}}`+"\n", 11+i)
			}
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	})
}

// watchSilently runs a watch with a silence bound on a mock clock, moving the clock a second
// at a time until the watch returns, and gives back what it emitted and the mock time it took.
func watchSilently(t *testing.T, h http.Handler, bound time.Duration, before int) ([]fsm.Event, time.Duration) {
	t.Helper()
	m := clockx.NewMock(time.Unix(0, 0))
	tr := transportFor(t, h, func(c *httpapi.Config) { c.Clock = m; c.Decoder = httpapi.Unstructured() })
	var mu sync.Mutex
	var events []fsm.Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Watch(t.Context(), fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, ResourceVersion: "10", SilenceBound: bound}, func(e fsm.Event) bool {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
			return true
		})
	}()
	// The stream delivers what it has (before events) before time moves.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= before
	}, 10*time.Second, time.Millisecond)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		err := m.WaitForTimers(ctx, 1)
		cancel()
		if err == nil {
			m.Add(time.Second)
		}
		select {
		case <-done:
			mu.Lock()
			defer mu.Unlock()
			return events, m.Now().Sub(time.Unix(0, 0))
		default:
		}
	}
}

// docs/semantics.md "silent watch": an open stream that delivers nothing more for the bound is
// ended and reported as a Timeout naming the silence, so the machine re-watches from the last
// RV; the frames it did deliver were reported first.
func TestSilentWatchIsEnded(t *testing.T) {
	events, took := watchSilently(t, stalling(2, false), 8*time.Second, 3)
	require.Len(t, events, 4)
	require.Equal(t, fsm.EvWatchOpened, events[0].Kind)
	require.Equal(t, "12", events[2].ResourceVersion)
	last := events[3]
	require.Equal(t, fsm.EvWatchEnded, last.Kind)
	require.NotNil(t, last.Failure)
	require.Equal(t, fsm.Timeout, last.Failure.Transport)
	require.Contains(t, last.Failure.Message, "delivered nothing (no events, no bookmarks) for 8s")
	// The watchdog looks eight times per bound: the last frame was seen at the first look.
	require.Equal(t, 9*time.Second, took, "ended within an eighth of the bound past the bound")
}

// A server that accepts the request and never answers it is silent too: the watch fails to
// open, as a connection that timed out.
func TestSilentWatchOpenFails(t *testing.T) {
	events, _ := watchSilently(t, stalling(0, true), 8*time.Second, 0)
	require.Len(t, events, 1)
	require.Equal(t, fsm.EvWatchOpenFailed, events[0].Kind)
	require.Equal(t, fsm.Timeout, events[0].Failure.Transport)
	require.Contains(t, events[0].Failure.Message, "delivered nothing")
}

// A stop is not a silence: nothing is reported.
func TestStoppedWatchIsNotSilent(t *testing.T) {
	tr := transportFor(t, stalling(1, false), func(c *httpapi.Config) { c.Decoder = httpapi.Unstructured() })
	ctx, cancel := context.WithCancel(t.Context())
	var events []fsm.Event
	tr.Watch(ctx, fsm.Command{Kind: fsm.CmdOpenWatch, Request: 2, SilenceBound: time.Hour}, func(e fsm.Event) bool {
		events = append(events, e)
		if e.Kind == fsm.EvWatchEvent {
			cancel()
		}
		return true
	})
	require.Len(t, events, 2, "opened, one bookmark, then nothing: the stop ended it")
	require.False(t, errors.Is(ctx.Err(), transport.ErrSilent))
}

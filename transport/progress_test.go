package transport_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport"
)

// blockingReader returns what it is fed, and blocks in Read until fed or closed; reading says
// a Read has begun.
type blockingReader struct{ feed, reading chan []byte }

func (r blockingReader) Read(p []byte) (int, error) {
	r.reading <- nil
	b, ok := <-r.feed
	if !ok {
		return 0, io.EOF
	}
	return copy(p, b), nil
}

// docs/semantics.md "A response that stops halfway": a wait the guard was told of — a Read of
// the body — that lasts its bound on the clock ends the request's context, with a
// *StalledError naming what was waited for; time spent outside a wait (the reader busy
// elsewhere, as when the store is slow) does not count, however long.
func TestAStalledReadEndsTheRequest(t *testing.T) {
	clock := clockx.NewMock(time.Unix(1000, 0))
	ctx, guard, stop := transport.WithProgress(context.Background(), clock)
	defer stop()
	r := blockingReader{feed: make(chan []byte), reading: make(chan []byte, 2)}
	body := guard.Reader(r, "the body", 30*time.Second)

	// A read that gets its bytes in time, then an hour outside any read.
	read := make(chan error, 1)
	go func() { _, err := body.Read(make([]byte, 8)); read <- err }()
	require.NoError(t, clock.WaitForTimers(ctx, 1))
	clock.Add(20 * time.Second)
	r.feed <- []byte("abc")
	require.NoError(t, <-read)
	clock.Add(time.Hour)
	require.NoError(t, ctx.Err(), "time outside a read is not a stall")

	// A read that waits its bound.
	<-r.reading
	go func() { _, err := body.Read(make([]byte, 8)); read <- err }()
	<-r.reading
	start := clock.Now()
	for clock.WaitForTimers(ctx, 1) == nil { // until the guard ends ctx
		clock.Add(time.Second)
	}
	waited := clock.Now().Sub(start)
	require.GreaterOrEqual(t, waited, 30*time.Second)
	require.Less(t, waited, 30*time.Second+30*time.Second/8+time.Second, "noticed within an eighth of the bound")
	st, ok := transport.Stalled(ctx)
	require.True(t, ok)
	require.Equal(t, "the body made no progress for 30s, the connection held open", st.Error())
	require.True(t, errors.Is(st, transport.ErrStalled))
	require.Equal(t, fsm.Stalled, transport.Classify(st))
	close(r.feed)
	<-read
}

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewatch/rewatch/clockx"
)

// ErrStalled is why a request that stopped making progress was ended: its response headers, or
// the next bytes of its body, did not come within the bound while the client was waiting for
// them, with the connection held open (docs/semantics.md, "A response that stops halfway").
var ErrStalled = errors.New("response stalled")

// StalledError says what a stalled request was waiting for, and how long. It matches
// ErrStalled.
type StalledError struct {
	What  string
	Bound time.Duration
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("%s made no progress for %v, the connection held open", e.What, e.Bound)
}

func (e *StalledError) Is(target error) bool { return target == ErrStalled }

// progressChecks is how many times per bound the guard looks at the wait in progress: a stall
// is noticed between bound and bound·(1 + 1/progressChecks) after the wait began.
const progressChecks = 8

// ProgressGuard ends a request that waits too long for its response: the headers, then each
// read of the body. Only the time the client spends waiting counts — a reader that stops
// reading because the store has not taken the last items yet is not stalled — so a body that
// flows slowly but steadily is never cut, however long it takes. A goroutine of the request's
// own looks at the wait in progress a few times per bound.
type ProgressGuard struct {
	clock clockx.Clock
	// since is when the wait in progress began (UnixNano; 0: not waiting), bound and what how
	// long it may last and what it waits for.
	since atomic.Int64
	bound atomic.Int64
	what  atomic.Pointer[string]

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// WithProgress is ctx, ended with a *StalledError as its cause once a wait the guard it also
// returns was told of (Wait, or a Read through Reader) has lasted its bound on clock. stop ends
// the guard; the request defers it.
func WithProgress(ctx context.Context, clock clockx.Clock) (_ context.Context, _ *ProgressGuard, stop func()) {
	gctx, cancel := context.WithCancelCause(ctx)
	g := &ProgressGuard{clock: clock, stop: make(chan struct{}), done: make(chan struct{})}
	go g.run(cancel)
	return gctx, g, func() {
		g.once.Do(func() { close(g.stop) })
		<-g.done
		cancel(nil)
	}
}

func (g *ProgressGuard) run(cancel context.CancelCauseFunc) {
	defer close(g.done)
	var t clockx.Timer
	for {
		step := time.Second
		if b := time.Duration(g.bound.Load()); b > 0 {
			step = max(b/progressChecks, time.Millisecond)
		}
		if t == nil {
			t = g.clock.NewTimer(step)
			defer t.Stop()
		} else {
			t.Reset(step)
		}
		select {
		case <-g.stop:
			return
		case <-t.C():
		}
		since, bound := g.since.Load(), time.Duration(g.bound.Load())
		if since != 0 && bound > 0 && g.clock.Now().Sub(time.Unix(0, since)) >= bound {
			cancel(&StalledError{What: *g.what.Load(), Bound: bound})
			return
		}
	}
}

// Wait notes that the client now waits for what, for at most bound (≤ 0: without bound); Done
// that it no longer does.
func (g *ProgressGuard) Wait(what string, bound time.Duration) { g.wait(&what, bound) }

func (g *ProgressGuard) wait(what *string, bound time.Duration) {
	if bound <= 0 {
		return
	}
	g.what.Store(what)
	g.bound.Store(int64(bound))
	g.since.Store(g.clock.Now().UnixNano())
}

// Done notes that the wait in progress is over.
func (g *ProgressGuard) Done() { g.since.Store(0) }

// Reader is r whose every Read is a wait for what, for at most bound.
func (g *ProgressGuard) Reader(r io.Reader, what string, bound time.Duration) io.Reader {
	if bound <= 0 {
		return r
	}
	return &guardedReader{r: r, g: g, what: what, bound: bound}
}

type guardedReader struct {
	r     io.Reader
	g     *ProgressGuard
	what  string
	bound time.Duration
}

func (r *guardedReader) Read(p []byte) (int, error) {
	r.g.wait(&r.what, r.bound)
	n, err := r.r.Read(p)
	r.g.Done()
	return n, err
}

// Stalled returns the *StalledError that ended ctx, if that is what ended it.
func Stalled(ctx context.Context) (*StalledError, bool) {
	var s *StalledError
	ok := errors.As(context.Cause(ctx), &s)
	return s, ok
}

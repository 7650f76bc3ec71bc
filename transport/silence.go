package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rewatch/rewatch/clockx"
)

// ErrSilent is why a watch that went silent was ended: it delivered nothing — no event, no
// bookmark — for longer than its silence bound (docs/semantics.md, "silent watch").
var ErrSilent = errors.New("watch went silent")

// SilentError says how long a watch had been silent when it was ended. It matches ErrSilent.
type SilentError struct{ Bound time.Duration }

func (e *SilentError) Error() string {
	return fmt.Sprintf("watch delivered nothing (no events, no bookmarks) for %v", e.Bound)
}

func (e *SilentError) Is(target error) bool { return target == ErrSilent }

// silenceChecks is how many times per bound the watchdog looks for a frame: a silent stream is
// noticed between bound and bound·(1 + 1/silenceChecks) after its last frame.
const silenceChecks = 8

// SilenceWatch notices a stream that has delivered nothing for longer than a bound. The
// stream's reader calls Frame for every frame it decodes — one atomic add, so the hot path
// reads no clock and arms no timer — and a goroutine of the watch's own looks, a few times per
// bound, whether frames have arrived since it last looked.
type SilenceWatch struct {
	frames atomic.Uint64
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

// WatchSilence starts a SilenceWatch that calls onSilent once, on its own goroutine, when bound
// has passed on clock without a Frame since the start or the last Frame. A bound ≤ 0 watches
// nothing: the result is nil, and a nil *SilenceWatch's methods do nothing.
func WatchSilence(clock clockx.Clock, bound time.Duration, onSilent func()) *SilenceWatch {
	if bound <= 0 {
		return nil
	}
	w := &SilenceWatch{stop: make(chan struct{}), done: make(chan struct{})}
	step := max(bound/silenceChecks, time.Millisecond)
	go func() {
		defer close(w.done)
		seen, since := w.frames.Load(), clock.Now()
		t := clock.NewTimer(step)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C():
			}
			now := clock.Now()
			if n := w.frames.Load(); n != seen {
				seen, since = n, now
			} else if now.Sub(since) >= bound {
				onSilent()
				return
			}
			t.Reset(step)
		}
	}()
	return w
}

// WithSilence is ctx ended, with a *SilentError as its cause, once bound has passed on clock
// without a Frame told to the SilenceWatch it also returns (a bound ≤ 0: never). stop ends the
// watch and then the context; a watch defers it.
func WithSilence(ctx context.Context, clock clockx.Clock, bound time.Duration) (_ context.Context, _ *SilenceWatch, stop func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	w := WatchSilence(clock, bound, func() { cancel(&SilentError{Bound: bound}) })
	return sctx, w, func() {
		w.Stop()
		cancel(nil)
	}
}

// Frame records that the stream delivered a frame.
func (w *SilenceWatch) Frame() {
	if w != nil {
		w.frames.Add(1)
	}
}

// Stop ends the watch and waits for its goroutine: after Stop, onSilent is not running and
// will not be called.
func (w *SilenceWatch) Stop() {
	if w == nil {
		return
	}
	w.once.Do(func() { close(w.stop) })
	<-w.done
}

// SilenceOr is the silence that ended ctx (a *SilentError cancel cause), or err when ctx was
// not ended for going silent.
func SilenceOr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrSilent) {
		return cause
	}
	return err
}

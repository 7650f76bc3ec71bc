package informer

import (
	"context"
	"time"
)

// resyncClock is when a handler is next due an update for every cached object.
type resyncClock struct {
	period time.Duration
	next   time.Time
}

func (i *Informer) wakeResync() {
	select {
	case i.resyncWake <- struct{}{}:
	default:
	}
}

// wakeResyncBefore wakes the resync loop for a handler first due at next, when the loop sleeps
// past it: a handler added does not cost a scan of every handler otherwise.
func (i *Informer) wakeResyncBefore(next time.Time) {
	if d := i.resyncDeadline.Load(); d == 0 || next.UnixNano() < d {
		i.wakeResync()
	}
}

// resyncLoop sends each handler with a resync period an update (old == new) for every cached
// object whenever its period has passed, as client-go's informer does, until ctx is done. The
// handlers are scanned without the informer's mu, which the store path needs for every change;
// it is taken only to snapshot the indexer and queue one resync for every handler due, behind
// the changes before it (docs/semantics.md, "Handlers").
func (i *Informer) resyncLoop(ctx context.Context) {
	for {
		i.resyncDeadline.Store(0) // scanning: a handler added meanwhile wakes the loop again
		now := i.opts.Clock.Now()
		var wait time.Duration
		var due map[*listener]struct{}
		synced := i.synced.Load()
		i.processor.each(func(l *listener) {
			if l.resync.period <= 0 {
				return
			}
			if !now.Before(l.resync.next) && synced {
				if due == nil {
					due = map[*listener]struct{}{}
				}
				due[l] = struct{}{}
				l.resync.next = now.Add(l.resync.period)
			}
			if d := l.resync.next.Sub(now); d > 0 && (wait == 0 || d < wait) {
				wait = d
			}
		})
		if due != nil {
			i.mu.Lock()
			// One copy of the indexer's pointers, in the processor's queue so that each handler
			// gets it after every change before it.
			i.distribute(notification{kind: notifyResync, obj: i.indexer.List(), due: due})
			i.mu.Unlock()
		}
		var timerC <-chan time.Time
		var stop func() bool
		deadline := int64(0)
		if wait > 0 {
			t := i.opts.Clock.NewTimer(wait)
			timerC, stop = t.C(), t.Stop
			deadline = now.Add(wait).UnixNano()
		}
		i.resyncDeadline.Store(deadline)
		select {
		case <-ctx.Done():
			if stop != nil {
				stop()
			}
			return
		case <-i.resyncWake:
		case <-timerC:
		}
		if stop != nil {
			stop()
		}
	}
}

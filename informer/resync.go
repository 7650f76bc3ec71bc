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

// resyncLoop sends each handler with a resync period an update (old == new) for every cached
// object whenever its period has passed, as client-go's informer does, until ctx is done.
func (i *Informer) resyncLoop(ctx context.Context) {
	for {
		i.mu.Lock()
		now := i.opts.Clock.Now()
		var wait time.Duration
		var snapshot []any // one copy of the indexer's pointers for every handler due now
		i.processor.each(func(l *listener) {
			if l.resync.period <= 0 {
				return
			}
			if !now.Before(l.resync.next) && i.synced.Load() {
				if snapshot == nil {
					snapshot = i.indexer.List()
				}
				// In the processor's queue, so the handler gets it after every change before it.
				i.distribute(notification{kind: notifyResync, obj: snapshot, to: l})
				l.resync.next = now.Add(l.resync.period)
			}
			if d := l.resync.next.Sub(now); d > 0 && (wait == 0 || d < wait) {
				wait = d
			}
		})
		i.mu.Unlock()
		var timerC <-chan time.Time
		var stop func() bool
		if wait > 0 {
			t := i.opts.Clock.NewTimer(wait)
			timerC, stop = t.C(), t.Stop
		}
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

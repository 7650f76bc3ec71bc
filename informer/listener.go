package informer

import (
	"sync"
	"sync/atomic"

	"k8s.io/client-go/tools/cache"
)

// notification is one call to make on a handler.
type notification struct {
	kind     notificationKind
	old, obj any
	initial  bool
}

type notificationKind uint8

const (
	notifyAdd notificationKind = iota
	notifyUpdate
	notifyDelete
)

// listener delivers notifications to one handler on its own goroutine, from a queue that never
// blocks the sender: the reflector's goroutine only appends.
type listener struct {
	handler cache.ResourceEventHandler
	resync  resyncClock

	mu    sync.Mutex
	queue []notification
	// spare is the emptied buffer of the last batch, the next queue; only run touches it.
	spare   []notification
	wake    chan struct{}
	stop    chan struct{}
	stopped bool
	done    chan struct{}

	// initialPending counts adds of the initial list not yet handed to the handler; synced
	// closes once the informer has synced and it is zero.
	initialPending atomic.Int64
	synced         chan struct{}
	syncOnce       sync.Once
}

func newListener(h cache.ResourceEventHandler, resync resyncClock) *listener {
	return &listener{handler: h, resync: resync, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), synced: make(chan struct{})}
}

// add queues n; it never blocks.
func (l *listener) add(n notification) {
	if n.initial {
		l.initialPending.Add(1)
	}
	l.mu.Lock()
	if !l.stopped {
		l.queue = append(l.queue, n)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take returns the queued notifications and gives the listener spare, emptied, as its next
// queue: the two buffers swap, so nothing is copied.
func (l *listener) take(spare []notification) []notification {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch := l.queue
	l.queue = spare[:0]
	return batch
}

// keptBuffer is the largest queue buffer a listener keeps between batches: an initial list of
// 50,000 objects must not leave 50,000 notifications' worth of memory behind for the
// informer's lifetime.
const keptBuffer = 1024

// run hands notifications to the handler until the listener is stopped.
func (l *listener) run(informerSynced func() bool) {
	defer close(l.done)
	for {
		select {
		case <-l.stop:
			return
		case <-l.wake:
		}
		batch := l.take(l.spare)
		for i := range batch {
			select {
			case <-l.stop:
				return
			default:
			}
			n := &batch[i]
			switch n.kind {
			case notifyAdd:
				l.handler.OnAdd(n.obj, n.initial)
				if n.initial {
					l.initialPending.Add(-1)
				}
			case notifyUpdate:
				l.handler.OnUpdate(n.old, n.obj)
			case notifyDelete:
				l.handler.OnDelete(n.obj)
			}
			*n = notification{}
		}
		l.spare = nil
		if cap(batch) <= keptBuffer {
			l.spare = batch[:0]
		}
		l.maybeSynced(informerSynced())
	}
}

// maybeSynced closes synced once the informer has synced and every initial add was handed over.
func (l *listener) maybeSynced(informerSynced bool) {
	if informerSynced && l.initialPending.Load() == 0 {
		l.syncOnce.Do(func() { close(l.synced) })
	}
}

func (l *listener) shutdown() {
	l.mu.Lock()
	if !l.stopped {
		l.stopped = true
		close(l.stop)
	}
	l.mu.Unlock()
}

// registration is what AddEventHandler returns.
type registration struct {
	l        *listener
	informer *Informer
}

// HasSynced is true once the informer has synced and this handler has been given every object
// of the initial list.
func (r *registration) HasSynced() bool {
	return r.informer.HasSynced() && r.l.initialPending.Load() == 0
}

func (r *registration) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: r.informer.name + " handler", done: r.l.synced}
}

type doneChecker struct {
	name string
	done chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

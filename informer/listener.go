package informer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
)

// notification is one call to make on a handler.
type notification struct {
	kind     notificationKind
	initial  bool
	old, obj any
	// due, for a resync, are the listeners it is for; the others pass over it. One
	// notification resyncs every handler due at once, so that a resync costs each of the
	// others one look, however many handlers are due.
	due map[*listener]struct{}
}

type notificationKind uint8

const (
	notifyAdd notificationKind = iota
	notifyUpdate
	notifyDelete
	// notifyResync is an update (old == new) for each object of obj, a []any snapshot of the
	// indexer: one notification for the whole resync of one handler.
	notifyResync
)

// pauseAfterPanic is how long a listener waits, after a handler call panicked, before it makes
// the next call, as client-go's does (when utilruntime.ReallyCrash is false).
const pauseAfterPanic = time.Second

// listener delivers notifications to one handler on its own goroutine. Its queue never blocks
// the processor: it holds ranges of the processor's shared chunks.
type listener struct {
	handler cache.ResourceEventHandler
	logger  logr.Logger
	inf     *Informer
	// resync is the resync loop's, set before the listener is registered.
	resync resyncClock
	// from is the sequence number of the first notification owed to this listener: the ones
	// before it are in the replay.
	from uint64
	// replay is the indexer's contents when the handler was added, handed over first as adds
	// with isInInitialList true.
	replay []any

	mu    sync.Mutex
	queue []segment
	// dropped is set, under mu, once the listener was stopped: what was queued was let go of,
	// and nothing more is queued.
	dropped bool
	// head is the index in queue of the next segment to hand over.
	head int
	wake chan struct{}

	// started is guarded by the processor's mu.
	started  bool
	stopping atomic.Bool
	stop     chan struct{}
	stopOnce sync.Once
	// done closes once the listener has stopped and no handler call is running: the
	// registration's ShutdownChan.
	done     chan struct{}
	doneOnce sync.Once

	// handedOver is the sequence number of the last notification handed over (or passed
	// over); replayed turns true once the replay was handed over. With the informer's
	// syncedAt they make the registration's HasSynced.
	handedOver atomic.Uint64
	replayed   atomic.Bool
	synced     chan struct{}
	syncOnce   sync.Once
}

// segment is a range of a shared chunk: notes, the first of which has sequence number first.
// The processor hands spans of it out; a listener queues the part owed to it.
//
// all is the whole range the processor handed out, from slot lo of the chunk: notes is all, or
// its tail for a listener that joined within it. The last holder of the range clears all.
type segment struct {
	c     *chunk
	notes []notification
	first uint64
	lo    int
	all   []notification
}

func newListener(inf *Informer, h cache.ResourceEventHandler, logger logr.Logger, resync resyncClock, from uint64, replay []any) *listener {
	l := &listener{handler: h, logger: logger, inf: inf, resync: resync, from: from, replay: replay,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), synced: make(chan struct{})}
	l.handedOver.Store(from - 1)
	l.replayed.Store(len(replay) == 0)
	return l
}

// push queues the part of s owed to l, holding s's chunk until it has handed that part over;
// it never blocks.
func (l *listener) push(s span) {
	if last := s.first + uint64(len(s.notes)) - 1; last < l.from {
		return
	}
	seg := s.segment
	if seg.first < l.from {
		seg.notes, seg.first = seg.notes[l.from-seg.first:], l.from
	}
	l.mu.Lock()
	if l.dropped {
		l.mu.Unlock()
		return
	}
	s.c.refs.Add(1)
	s.c.pending[s.lo].Add(1)
	l.queue = append(l.queue, seg)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next pops the first queued segment: the listener holds one segment at a time, so that what
// a removal drops (everything queued) is all but the notification being handed over.
func (l *listener) next() (segment, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.head == len(l.queue) {
		return segment{}, false
	}
	s := l.queue[l.head]
	l.queue[l.head] = segment{}
	l.head++
	if l.head == len(l.queue) {
		// Emptied: the buffer is reused, unless a handler that fell far behind grew it.
		l.queue, l.head = l.queue[:0], 0
		if cap(l.queue) > keptBuffer {
			l.queue = nil
		}
	}
	return s, true
}

// keptBuffer is the largest queue buffer a listener keeps once emptied: a handler that fell
// far behind must not keep that much memory for the informer's lifetime.
const keptBuffer = 1024

// run hands notifications to the handler until the listener is stopped: the replay first, then
// what the processor pushes, one segment at a time. The segment it holds when it stops is let
// go of.
func (l *listener) run() {
	var s segment
	defer func() {
		if s.c != nil {
			s.done()
		}
		l.drop()
		l.finish()
	}()
	c := caller{l: l}
	for _, obj := range l.replay {
		if !c.call(&notification{kind: notifyAdd, obj: obj, initial: true}) {
			return
		}
	}
	l.replay = nil
	l.replayed.Store(true)
	l.maybeSynced()
	for {
		select {
		case <-l.stop:
			return
		case <-l.wake:
		}
		for {
			var ok bool
			if s, ok = l.next(); !ok {
				break
			}
			notes := s.notes
			for j := range notes {
				n := &notes[j]
				if n.kind == notifyResync {
					if _, due := n.due[l]; !due {
						continue
					}
				}
				if !c.call(n) {
					return
				}
			}
			l.handedOver.Store(s.first + uint64(len(s.notes)) - 1)
			s.done()
			s = segment{}
		}
		l.maybeSynced()
	}
}

// done is the listener finished with s: the range, then the chunk, are let go of.
func (s *segment) done() {
	s.letGo()
	s.c.release()
}

// drop lets go of everything queued and queues nothing more: a removed handler's backlog is
// freed at once, whatever its goroutine is doing and however long the caller keeps the
// registration (docs/semantics.md, "Handlers").
func (l *listener) drop() {
	l.mu.Lock()
	queue := l.queue[l.head:]
	l.queue, l.head, l.dropped = nil, 0, true
	l.mu.Unlock()
	for k := range queue {
		queue[k].done()
	}
}

// caller makes handler calls, recovering a panic as client-go's listener does.
type caller struct {
	l      *listener
	paused bool
}

// call hands n to the handler (a resync: each of its objects); it is false once the listener
// is stopping.
func (c *caller) call(n *notification) bool {
	if n.kind != notifyResync {
		return c.one(n)
	}
	for _, obj := range n.obj.([]any) {
		if !c.one(&notification{kind: notifyUpdate, old: obj, obj: obj}) {
			return false
		}
	}
	return true
}

// one makes one handler call; after a call that panicked, the next one waits pauseAfterPanic
// first.
func (c *caller) one(n *notification) bool {
	if c.l.stopping.Load() {
		return false
	}
	if c.paused && !c.l.sleep(pauseAfterPanic) {
		return false
	}
	c.paused = !c.l.handle(n)
	return true
}

// handle makes one handler call. A panic is handled by utilruntime.HandleCrashWithLogger, as
// in client-go: logged with the handler's logger, given to utilruntime.PanicHandlers, and then,
// when utilruntime.ReallyCrash is true (its default), raised again, which ends the process;
// otherwise the notification is dropped and handle reports false.
func (l *listener) handle(n *notification) (completed bool) {
	if l.inf.panicsOutOfRun {
		// Runs after HandleCrashWithLogger, which raises the panic again only when
		// utilruntime.ReallyCrash is true: the panic goes to Run instead of ending the process
		// here (NewInformerWithOptions).
		defer func() {
			if r := recover(); r != nil {
				l.inf.crashed(r)
			}
		}()
	}
	defer utilruntime.HandleCrashWithLogger(l.logger)
	switch n.kind {
	case notifyAdd:
		l.handler.OnAdd(n.obj, n.initial)
	case notifyUpdate:
		l.handler.OnUpdate(n.old, n.obj)
	case notifyDelete:
		l.handler.OnDelete(n.obj)
	}
	return true
}

// sleep waits d on the informer's clock; it is false if the listener was stopped meanwhile.
func (l *listener) sleep(d time.Duration) bool {
	t := l.inf.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-l.stop:
		return false
	}
}

// maybeSynced closes synced once the informer has synced and this handler has been given every
// notification up to the one that completed the initial state.
func (l *listener) maybeSynced() {
	if l.hasSynced() {
		l.syncOnce.Do(func() { close(l.synced) })
	}
}

func (l *listener) hasSynced() bool {
	return l.inf.synced.Load() && l.replayed.Load() && l.handedOver.Load() >= l.inf.syncedAt.Load()
}

// shutdown stops the listener: what was queued for it is dropped, a handler call under way
// completes. A listener that never ran (started false: it is no longer registered, so it
// never will) is finished at once.
func (l *listener) shutdown(started bool) {
	l.stopOnce.Do(func() {
		l.stopping.Store(true)
		close(l.stop)
	})
	l.drop()
	if !started {
		l.finish()
	}
}

func (l *listener) finish() { l.doneOnce.Do(func() { close(l.done) }) }

// registration is what AddEventHandler returns.
type registration struct {
	l        *listener
	informer *Informer
}

// HasSynced is true once the informer has synced and this handler has been given every object
// of the initial list.
func (r *registration) HasSynced() bool { return r.l.hasSynced() }

func (r *registration) HasSyncedChecker() cache.DoneChecker {
	return doneChecker{name: r.informer.name + " handler", done: r.l.synced}
}

// ShutdownChan closes once the handler has been removed (or the informer has stopped) and no
// call to it is running, which is what cache.ShutDownEventHandler waits for.
func (r *registration) ShutdownChan() <-chan struct{} { return r.l.done }

type doneChecker struct {
	name string
	done chan struct{}
}

func (d doneChecker) Name() string          { return d.name }
func (d doneChecker) Done() <-chan struct{} { return d.done }

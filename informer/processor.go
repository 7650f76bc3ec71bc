package informer

import (
	"context"
	"sync"
)

// processor hands the notifications the store path queues to the listeners, on its own
// goroutine: the reflector's goroutine appends each notification once, whatever the number of
// handlers, and returns (docs/semantics.md, "Handlers").
//
// Every notification carries a sequence number, given under the informer's mu together with
// the indexer's change it reports. A listener remembers the first number it is owed (the one
// after the snapshot of the indexer it was given as adds), so the processor can hand it a
// batch queued before it joined and the listener still sees each change exactly once.
type processor struct {
	// seq and pending are guarded by the informer's mu, with the indexer.
	seq     uint64
	pending []notification
	wake    chan struct{}
	// keep is the capacity of the next pending buffer: the size of the last batch, up to
	// keptBuffer.
	keep int

	// mu guards the set of listeners and their lifecycle; the informer's mu, where both are
	// taken, is taken first.
	mu        sync.Mutex
	listeners map[*listener]struct{}
	running   bool
	stopped   bool
	wg        sync.WaitGroup
}

// batch is a run of notifications with consecutive sequence numbers, shared read-only by every
// listener it is handed to.
type batch struct {
	first uint64 // the sequence number of notes[0]
	notes []notification
}

func newProcessor() *processor {
	return &processor{wake: make(chan struct{}, 1), listeners: map[*listener]struct{}{}}
}

// enqueue numbers n and queues it for the processor; the informer's mu is held.
func (p *processor) enqueue(n notification) {
	p.seq++
	p.pending = append(p.pending, n)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued as a batch; the informer's mu is held.
func (p *processor) take(fresh []notification) batch {
	b := batch{first: p.seq - uint64(len(p.pending)) + 1, notes: p.pending}
	p.pending = fresh
	return b
}

// run hands batches to the listeners until ctx is done. lock is the informer's mu.
func (p *processor) run(ctx context.Context, lock sync.Locker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		// The next buffer is made before the lock is taken, so that the reflector waits for a
		// swap of two slices and nothing more.
		fresh := make([]notification, 0, p.keep)
		lock.Lock()
		b := p.take(fresh)
		lock.Unlock()
		if len(b.notes) == 0 {
			continue
		}
		p.keep = min(len(b.notes), keptBuffer)
		p.mu.Lock()
		for l := range p.listeners {
			l.push(&b)
		}
		p.mu.Unlock()
	}
}

// add registers l, and starts it if the informer runs.
func (p *processor) add(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		l.shutdown()
		return
	}
	p.listeners[l] = struct{}{}
	if p.running {
		p.start(l)
	}
}

// remove unregisters l and stops it; it reports whether l was registered.
func (p *processor) remove(l *listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.listeners[l]; !ok {
		return false
	}
	delete(p.listeners, l)
	l.shutdown()
	return true
}

// start runs l's goroutine; p.mu is held.
func (p *processor) start(l *listener) {
	l.started = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		l.run()
	}()
}

// startAll starts every registered listener, and those registered later as they come.
func (p *processor) startAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running = true
	for l := range p.listeners {
		p.start(l)
	}
}

// stopAll stops every listener and waits until none is in a handler call. A listener that
// never ran is finished at once, so that every registration's ShutdownChan closes.
func (p *processor) stopAll() {
	p.mu.Lock()
	p.running, p.stopped = false, true
	for l := range p.listeners {
		l.shutdown()
	}
	clear(p.listeners)
	p.mu.Unlock()
	p.wg.Wait()
}

// each calls f for every registered listener, under p.mu.
func (p *processor) each(f func(*listener)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for l := range p.listeners {
		f(l)
	}
}

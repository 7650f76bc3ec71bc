package informer

import (
	"context"
	"sync"
	"sync/atomic"
)

// processor hands the notifications the store path queues to the listeners, on its own
// goroutine: the reflector's goroutine appends each notification once, whatever the number of
// handlers, and returns (docs/semantics.md, "Handlers").
//
// Every notification carries a sequence number, given under the informer's mu together with
// the indexer's change it reports. A listener remembers the first number it is owed (the one
// after the snapshot of the indexer it was given as adds), so the processor can hand it
// notifications queued before it joined and the listener still sees each change exactly once.
//
// The queue is a run of fixed-size chunks, filled in place: a chunk never grows (no copying
// as a burst arrives), the processor hands its listeners ranges of it as they fill, and a chunk
// every holder has let go of is kept for reuse.
type processor struct {
	// seq, full and cur are guarded by the informer's mu, with the indexer.
	seq uint64
	// full are the chunks filled since the processor last took them; cur is being filled.
	full []*chunk
	cur  *chunk
	wake chan struct{}
	// free holds released chunks for reuse; a channel rather than a sync.Pool, which every
	// garbage collection empties.
	free chan *chunk

	// mu guards the set of listeners and their lifecycle. Handlers added once the informer
	// stopped are refused by the informer, under its mu, before they reach join.
	mu        sync.Mutex
	listeners map[*listener]struct{}
	running   bool
	wg        sync.WaitGroup
	// joining are listeners added (join, under the informer's mu) and not yet in listeners:
	// joinMu is held for an append only, so that a handler being added, which holds the
	// informer's mu for reading, never waits for mu — nor the store path, which waits for it.
	// Whoever takes mu next moves them in (settle).
	joinMu  sync.Mutex
	joining []*listener
	// all is the set of listeners as a slice, for the processor's pushes and the resync loop's
	// scans, which read it without mu, so that, however many handlers there are, they hold up
	// neither a handler being added nor one being removed. A change only counts a new
	// generation (gen); the next reader rebuilds the slice, once for any number of changes.
	// The slice carries the generation it was built for, so that a reader never takes a slice
	// another reader is still rebuilding for a change it already counted: a listener that
	// joined before the processor took a notification would miss it (its handler never told,
	// its registration never synced).
	all atomic.Pointer[listenerSet]
	gen atomic.Uint64
}

// listenerSet is the set of listeners as of generation gen.
type listenerSet struct {
	gen  uint64
	list []*listener
}

// chunkSize is the number of notifications in a chunk.
const chunkSize = 256

// freeChunks is how many released chunks the processor keeps for reuse (15 KiB each): enough
// for a steady stream (one being filled, one or two being handed over), few enough that a
// cache of 50,000 objects carries about a byte per object for them. An initial list of 50,000
// objects needs 196 chunks, which are not kept once handed over.
const freeChunks = 4

// chunk holds notifications with consecutive sequence numbers. notes only grows (by the store
// path, under the informer's mu) within its fixed capacity; what has been handed to listeners
// is read-only, so they read it while the rest fills. refs counts its holders: the processor
// while the chunk is being filled or handed, and each listener until it has handed its range
// over (or was removed); the last to let go returns it to free.
//
// Each range the processor hands out is also counted on its own (pending, indexed by the
// range's first slot): once every listener has handed it over, its slots are cleared, so a
// notification's objects are not kept alive by a chunk that is still being filled while the
// resource is quiet, as client-go's listener lets go of each notification it has handed over
// (docs/semantics.md, "Handlers").
type chunk struct {
	first uint64 // the sequence number of notes[0]
	notes []notification
	// handed is how far the processor has handed notes out; only the processor touches it.
	handed  int
	refs    atomic.Int32
	pending [chunkSize]atomic.Int32
	free    chan *chunk
}

// release lets go of c; the last holder clears it (its objects may be collected) and keeps it
// for reuse.
func (c *chunk) release() {
	if c.refs.Add(-1) != 0 {
		return
	}
	clear(c.notes)
	c.notes, c.handed = c.notes[:0], 0
	select {
	case c.free <- c:
	default: // enough are kept already
	}
}

func newProcessor() *processor {
	return &processor{wake: make(chan struct{}, 1), listeners: map[*listener]struct{}{}, free: make(chan *chunk, freeChunks)}
}

// chunk returns a released chunk, or a new one, held by the processor.
func (p *processor) chunk() *chunk {
	var c *chunk
	select {
	case c = <-p.free:
	default:
		c = &chunk{notes: make([]notification, 0, chunkSize), free: p.free}
	}
	c.refs.Store(1)
	return c
}

// enqueue numbers n and queues it for the processor; the informer's mu is held.
func (p *processor) enqueue(n notification) {
	p.seq++
	if p.cur == nil {
		p.cur = p.chunk()
		p.cur.first = p.seq
	}
	p.cur.notes = append(p.cur.notes, n)
	if len(p.cur.notes) == chunkSize {
		p.full, p.cur = append(p.full, p.cur), nil
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// span is a range of a chunk to hand to the listeners. done marks a full chunk's last range,
// after which the processor lets go of it. The slice is taken under the informer's mu: the
// store path may be appending to the chunk while listeners read what came before.
type span struct {
	segment
	done bool
}

// take returns the ranges filled since the last take; the informer's mu is held.
func (p *processor) take(spans []span) []span {
	for _, c := range p.full {
		spans = append(spans, span{segment: c.handOut(), done: true})
	}
	clear(p.full)
	p.full = p.full[:0]
	if c := p.cur; c != nil && c.handed < len(c.notes) {
		spans = append(spans, span{segment: c.handOut()})
	}
	return spans
}

// handOut returns the part of c not handed out yet, which is handed out now; the informer's
// mu is held.
func (c *chunk) handOut() segment {
	notes := c.notes[c.handed:len(c.notes):len(c.notes)]
	s := segment{c: c, notes: notes, first: c.first + uint64(c.handed), lo: c.handed, all: notes}
	c.handed = len(c.notes)
	return s
}

// letGo is one holder of s's range done with it: the last clears the range's slots (its
// objects may be collected). The chunk itself is let go of apart (release).
func (s *segment) letGo() {
	if s.c.pending[s.lo].Add(-1) == 0 {
		clear(s.all)
	}
}

// processorRunHook, when a test sets it, runs before the processor begins handing out: a
// processor that starts after the first notifications were queued must hand them out all the
// same (client-go's informer once deadlocked so).
var processorRunHook atomic.Pointer[func()]

// run hands what is queued to the listeners until ctx is done. lock is the informer's mu.
func (p *processor) run(ctx context.Context, lock sync.Locker) {
	if hook := processorRunHook.Load(); hook != nil {
		(*hook)()
	}
	var spans []span
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		lock.Lock()
		spans = p.take(spans[:0])
		lock.Unlock()
		// The listeners to push to are those registered now: one that needs any of these
		// notifications registered (under the informer's mu) before they were taken, and one
		// registered since ignores them (push); a listener removed meanwhile takes no more.
		targets := p.listening()
		for k := range spans {
			s := &spans[k]
			if len(s.notes) > 0 {
				// The processor holds the range while it pushes, so that a listener done with
				// it at once does not clear it under the others.
				s.c.pending[s.lo].Store(1)
				for _, l := range targets {
					l.push(*s)
				}
				s.letGo()
			}
		}
		for k, s := range spans {
			if s.done {
				s.c.release()
			}
			spans[k] = span{}
		}
	}
}

// join registers l, to be started if the informer runs; the informer's mu is held (for
// reading, at least) and it has not stopped. Any notification queued after the informer's mu
// is let go of reaches l: the processor takes them under that mu, and reads the listeners
// (listening) after.
func (p *processor) join(l *listener) {
	p.joinMu.Lock()
	p.joining = append(p.joining, l)
	p.joinMu.Unlock()
	p.gen.Add(1)
}

// settle moves the listeners that joined into the set, and starts them if the informer runs.
func (p *processor) settle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settleLocked()
}

// settleLocked is settle with p.mu held.
func (p *processor) settleLocked() {
	p.joinMu.Lock()
	joined := p.joining
	p.joining = nil
	p.joinMu.Unlock()
	for _, l := range joined {
		p.listeners[l] = struct{}{}
		if p.running {
			p.start(l)
		}
	}
}

// remove unregisters l and stops it; a listener no longer registered is left as it is.
func (p *processor) remove(l *listener) {
	p.mu.Lock()
	p.settleLocked()
	_, ok := p.listeners[l]
	delete(p.listeners, l)
	started := l.started
	p.mu.Unlock()
	if ok {
		p.gen.Add(1)
		l.shutdown(started)
	}
}

// listening is the listeners registered now, those that joined included; the slice is not to
// be changed. It is rebuilt only when the set changed since it was last built.
func (p *processor) listening() []*listener {
	if set := p.all.Load(); set != nil && set.gen == p.gen.Load() {
		return set.list
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The generation is read before the joined listeners are moved in: every change it
	// counts has been made (join appends, then counts), so the slice built holds it.
	gen := p.gen.Load()
	if set := p.all.Load(); set != nil && set.gen == gen {
		return set.list
	}
	p.settleLocked()
	list := make([]*listener, 0, len(p.listeners))
	for l := range p.listeners {
		list = append(list, l)
	}
	p.all.Store(&listenerSet{gen: gen, list: list})
	return list
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
	p.settleLocked()
	p.running = true
	for l := range p.listeners {
		if !l.started {
			p.start(l)
		}
	}
}

// stopAll stops every listener and waits until none is in a handler call. A listener that
// never ran is finished at once, so that every registration's ShutdownChan closes.
func (p *processor) stopAll() {
	p.mu.Lock()
	p.settleLocked()
	p.running = false
	for l := range p.listeners {
		l.shutdown(l.started)
	}
	clear(p.listeners)
	p.gen.Add(1)
	p.mu.Unlock()
	p.wg.Wait()
}

// each calls f for every listener registered now, without p.mu (processor.all).
func (p *processor) each(f func(*listener)) {
	for _, l := range p.listening() {
		f(l)
	}
}

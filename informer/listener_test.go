package informer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// An initial list queues one notification per object at once; once the processor has handed
// them over and the listener has handed them to its handler, at most freeChunks chunks are
// kept, every one of them cleared, and the listener keeps no large queue.
func TestProcessorReleasesALargeBatch(t *testing.T) {
	inf := New(nil, &corev1.ConfigMap{}, Options{})
	const n = 40 * chunkSize
	var seen atomic.Int64
	l := newListener(inf, cache.ResourceEventHandlerFuncs{AddFunc: func(any) { seen.Add(1) }}, logr.Discard(), resyncClock{}, 1, nil)
	p := inf.processor
	p.join(l)
	p.startAll()
	defer p.stopAll()
	inf.mu.Lock() // hold the queue so that all n go out at once
	for range n {
		p.enqueue(notification{kind: notifyAdd, obj: "x"})
	}
	chunks := slices.Clone(p.full)
	inf.mu.Unlock()
	require.Len(t, chunks, n/chunkSize)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.run(ctx, &inf.mu) })
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool { return seen.Load() == n }, time.Minute, time.Millisecond)
	// Every full chunk is let go of, by the processor and the listener, each on its own
	// goroutine; the first freeChunks of them are kept. Only then is the free list settled,
	// so that the one "y" takes is the only one missing from it.
	require.Eventually(t, func() bool {
		for _, c := range chunks {
			if c.refs.Load() != 0 {
				return false
			}
		}
		return len(p.free) == freeChunks
	}, time.Minute, time.Millisecond)
	inf.mu.Lock()
	p.enqueue(notification{kind: notifyAdd, obj: "y"}) // one more round
	inf.mu.Unlock()
	require.Eventually(t, func() bool { return l.handedOver.Load() == n+1 }, time.Minute, time.Millisecond)
	// All but the one "y" went into are kept for reuse.
	require.Len(t, p.free, freeChunks-1)
	for range freeChunks - 1 {
		c := <-p.free
		require.Empty(t, c.notes, "a kept chunk holds notifications")
		require.Equal(t, chunkSize, cap(c.notes))
		for _, n := range c.notes[:cap(c.notes)] {
			require.Nil(t, n.obj, "a kept chunk still points to an object")
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.LessOrEqual(t, cap(l.queue), keptBuffer)
}

// A range the processor handed out is cleared only once every listener that holds it has
// handed it over: not when another listener holding it is removed, nor when one that joins
// within the chunk hands over its own, later range.
func TestProcessorKeepsARangeUntilEveryListenerHasIt(t *testing.T) {
	inf := New(nil, &corev1.ConfigMap{}, Options{})
	p := inf.processor
	inCall, release := make(chan struct{}), make(chan struct{})
	record := func(mu *sync.Mutex, got *[]string, block bool) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			name, _ := obj.(string)
			mu.Lock()
			*got = append(*got, name)
			first := len(*got) == 1
			mu.Unlock()
			if block && first {
				close(inCall)
				<-release
			}
		}}
	}
	var slowMu, goneMu, lateMu sync.Mutex
	var slowGot, goneGot, lateGot []string
	slow := newListener(inf, record(&slowMu, &slowGot, true), logr.Discard(), resyncClock{}, 1, nil)
	gone := newListener(inf, record(&goneMu, &goneGot, false), logr.Discard(), resyncClock{}, 1, nil)
	p.join(slow)
	p.join(gone)
	p.startAll()
	defer p.stopAll()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.run(ctx, &inf.mu) })
	defer func() { cancel(); wg.Wait() }()
	enqueue := func(names ...string) {
		inf.mu.Lock()
		defer inf.mu.Unlock()
		for _, name := range names {
			p.enqueue(notification{kind: notifyAdd, obj: name})
		}
	}

	enqueue("a", "b", "c")
	<-inCall // slow holds the range, within its first call
	require.Eventually(t, func() bool { return gone.handedOver.Load() == 3 }, time.Minute, time.Millisecond)
	p.remove(gone) // the other holder goes: the range must stay for slow
	inf.mu.Lock()
	late := newListener(inf, record(&lateMu, &lateGot, false), logr.Discard(), resyncClock{}, p.seq+1, nil)
	p.join(late) // joins within the chunk
	inf.mu.Unlock()
	p.settle()
	enqueue("d", "e")
	require.Eventually(t, func() bool { return late.handedOver.Load() == 5 }, time.Minute, time.Millisecond)
	close(release)
	require.Eventually(t, func() bool { return slow.handedOver.Load() == 5 }, time.Minute, time.Millisecond)

	slowMu.Lock()
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, slowGot)
	slowMu.Unlock()
	goneMu.Lock()
	require.Equal(t, []string{"a", "b", "c"}, goneGot)
	goneMu.Unlock()
	lateMu.Lock()
	require.Equal(t, []string{"d", "e"}, lateGot)
	lateMu.Unlock()
}

// A listener that joined is in the set every reader gets afterwards, however readers race: the
// processor reading the set while the resync loop or a sync check rebuilds it must not take the
// set as it was before the join — the listener would miss the notifications the processor hands
// out (its handler never told, its registration never synced).
func TestEveryReaderOfTheListenersSeesAJoin(t *testing.T) {
	for range 2000 {
		inf := New(nil, &corev1.ConfigMap{}, Options{})
		p := inf.processor
		before := newListener(inf, cache.ResourceEventHandlerFuncs{}, logr.Discard(), resyncClock{}, 1, nil)
		p.join(before)
		require.Len(t, p.listening(), 1)
		joined := newListener(inf, cache.ResourceEventHandlerFuncs{}, logr.Discard(), resyncClock{}, 1, nil)
		p.join(joined)
		var start, readers sync.WaitGroup
		start.Add(1)
		got := make([][]*listener, 4)
		for r := range got {
			readers.Go(func() {
				start.Wait()
				got[r] = p.listening()
			})
		}
		start.Done()
		readers.Wait()
		for r, list := range got {
			require.Contains(t, list, joined, "reader %d took the set from before the join", r)
		}
	}
}

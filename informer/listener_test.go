package informer

import (
	"context"
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
// them over, neither it nor the listener may keep a buffer of that size for the rest of its life.
func TestProcessorReleasesALargeBatch(t *testing.T) {
	inf := New(nil, &corev1.ConfigMap{}, Options{})
	const n = 20 * keptBuffer
	var seen atomic.Int64
	l := newListener(inf, cache.ResourceEventHandlerFuncs{AddFunc: func(any) { seen.Add(1) }}, logr.Discard(), resyncClock{}, 1, nil)
	p := inf.processor
	p.add(l)
	p.startAll()
	defer p.stopAll()
	inf.mu.Lock() // hold the queue so that all n go out as one batch
	for range n {
		p.enqueue(notification{kind: notifyAdd, obj: "x"})
	}
	inf.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { p.run(ctx, &inf.mu) })
	defer func() { cancel(); wg.Wait() }()
	require.Eventually(t, func() bool { return seen.Load() == n }, time.Minute, time.Millisecond)
	inf.mu.Lock()
	p.enqueue(notification{kind: notifyAdd, obj: "y"}) // one more round trip through take
	inf.mu.Unlock()
	require.Eventually(t, func() bool { return seen.Load() == n+1 }, time.Minute, time.Millisecond)
	require.Eventually(t, func() bool { return l.handedOver.Load() == n+1 }, time.Minute, time.Millisecond)
	inf.mu.Lock()
	defer inf.mu.Unlock()
	require.LessOrEqual(t, cap(p.pending), keptBuffer, "the processor kept the initial list's buffer as its queue")
}

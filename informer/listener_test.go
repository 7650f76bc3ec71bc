package informer

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"
)

// An initial list queues one notification per object at once; once they are handed over, the
// listener must not keep a buffer of that size for the rest of its life.
func TestListenerReleasesALargeBatch(t *testing.T) {
	delivered := make(chan struct{}, 1)
	const n = 20 * keptBuffer
	var seen atomic.Int64
	l := newListener(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {
		if seen.Add(1) == n {
			delivered <- struct{}{}
		}
	}}, resyncClock{})
	l.mu.Lock() // hold the queue so that all n arrive as one batch
	for range n {
		l.queue = append(l.queue, notification{kind: notifyAdd, obj: "x"})
	}
	l.mu.Unlock()
	go l.run(func() bool { return true })
	l.wake <- struct{}{}
	select {
	case <-delivered:
	case <-time.After(time.Minute):
		t.Fatal("batch not delivered")
	}
	l.add(notification{kind: notifyAdd, obj: "y"}) // one more round trip through take
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queue) == 0 && seen.Load() == n+1
	}, time.Minute, time.Millisecond)
	l.shutdown()
	<-l.done
	require.LessOrEqual(t, cap(l.queue), keptBuffer, "the listener kept the initial list's buffer as its queue")
	require.LessOrEqual(t, cap(l.spare), keptBuffer, "the listener kept the initial list's buffer as its spare")
}

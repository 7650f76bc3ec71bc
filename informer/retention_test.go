package informer_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
)

// updateSource is a ListerWatcher of one ConfigMap whose watch a test feeds: it keeps nothing
// it has delivered, so whatever stays reachable is held by the informer.
type updateSource struct {
	w    *watch.FakeWatcher
	sent int
}

func newUpdateSource() *updateSource { return &updateSource{w: watch.NewFakeWithChanSize(16, false)} }

func (s *updateSource) lw() cache.ListerWatcher {
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (kruntime.Object, error) {
			return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			if o.ResourceVersion != "1" {
				return watch.NewFake(), nil // a later watch delivers nothing
			}
			return s.w, nil
		},
	}, listOnly{})
}

// update sends the next n versions of ns/cm, each a fresh object, and returns weak pointers to
// them.
func (s *updateSource) update(n int) []weak.Pointer[corev1.ConfigMap] {
	var out []weak.Pointer[corev1.ConfigMap]
	for range n {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", ResourceVersion: fmt.Sprint(2 + s.sent)},
			Data: map[string]string{"payload": string(make([]byte, 1024))}}
		out = append(out, weak.Make(obj))
		s.sent++
		if s.sent == 1 {
			s.w.Add(obj)
		} else {
			s.w.Modify(obj)
		}
	}
	return out
}

// alive counts the objects that are still reachable after a full collection.
func alive(ptrs []weak.Pointer[corev1.ConfigMap]) int {
	runtime.GC()
	runtime.GC()
	n := 0
	for _, p := range ptrs {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// callCounter is a handler that counts its calls.
type callCounter struct{ calls atomic.Int64 }

func (c *callCounter) OnAdd(any, bool)   { c.calls.Add(1) }
func (c *callCounter) OnUpdate(_, _ any) { c.calls.Add(1) }
func (c *callCounter) OnDelete(any)      { c.calls.Add(1) }
func (c *callCounter) waitFor(t *testing.T, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return c.calls.Load() == n }, 10*time.Second, time.Millisecond)
}

// docs/semantics.md, "Handlers": a notification every handler has been given is let go of at
// once, while the resource then stays quiet: after 200 updates of one object, handed to two
// handlers, only the object the cache holds is reachable — not the 199 earlier versions the
// notifications carried (as old and new objects).
func TestHandedNotificationsAreNotKept(t *testing.T) {
	src := newUpdateSource()
	inf := informer.WithOptions(quiet)(src.lw(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	var a, b callCounter
	_, err := inf.AddEventHandler(&a)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(&b)
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	const n = 200
	objs := src.update(n)
	a.waitFor(t, n)
	b.waitFor(t, n)
	// A listener lets go of a range just after its last call returns: wait for that.
	require.Eventually(t, func() bool { return alive(objs) == 1 }, 5*time.Second, 10*time.Millisecond,
		"versions kept alive by handed notifications: %d", alive(objs))
	require.NotNil(t, objs[n-1].Value(), "the cached object was collected")
}

// blocked is a handler whose first call waits until released.
type blocked struct {
	callCounter
	once    sync.Once
	inCall  chan struct{}
	release chan struct{}
}

func (b *blocked) OnAdd(obj any, initial bool) {
	b.once.Do(func() { close(b.inCall); <-b.release })
	b.callCounter.OnAdd(obj, initial)
}

func (b *blocked) OnUpdate(old, obj any) { b.callCounter.OnUpdate(old, obj) }

// docs/semantics.md, "Handlers": RemoveEventHandler drops what was queued for the handler at
// once, even while a call to it is under way and the caller holds the registration: the
// backlog's objects are not kept.
func TestRemovedHandlersBacklogIsDropped(t *testing.T) {
	src := newUpdateSource()
	inf := informer.WithOptions(quiet)(src.lw(), &corev1.ConfigMap{}, 0, cache.Indexers{})
	slow := &blocked{inCall: make(chan struct{}), release: make(chan struct{})}
	defer close(slow.release)
	reg, err := inf.AddEventHandler(slow)
	require.NoError(t, err)
	var other callCounter
	_, err = inf.AddEventHandler(&other)
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	const n = 200
	objs := src.update(1)
	<-slow.inCall // the slow handler is given the first version, alone, and holds on to it
	objs = append(objs, src.update(n-1)...)
	other.waitFor(t, n) // every update is queued for the slow handler by now
	require.NoError(t, inf.RemoveEventHandler(reg))
	// The call under way holds the first version; the cache holds the last.
	require.Eventually(t, func() bool { return alive(objs) <= 2 }, 5*time.Second, 10*time.Millisecond,
		"a removed handler's backlog is kept: %d", alive(objs))
	runtime.KeepAlive(reg)
}

package informer_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/sim"
)

// recordingLW is a client-go ListWatch over the simulator that records what the informer asks
// for; once hold is set, the next plain watch waits until it is released.
type recordingLW struct {
	base    cache.ListerWatcherWithContext
	lists   atomic.Int32
	streams atomic.Int32 // watches with sendInitialEvents
	watches atomic.Int32 // plain watches
	mu      sync.Mutex
	hold    chan struct{}
	held    chan struct{}
	refuse  bool // answer a watch-list as a server without it does
}

func newRecordingLW(t *testing.T, url string) *recordingLW {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url})
	require.NoError(t, err)
	return &recordingLW{base: cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "default", fields.Everything())}
}

func (l *recordingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	l.lists.Add(1)
	return l.base.ListWithContext(ctx, o)
}

func (l *recordingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		l.streams.Add(1)
		if l.refuse {
			return nil, apierrors.NewBadRequest("sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled")
		}
		return l.base.WatchWithContext(ctx, o)
	}
	l.watches.Add(1)
	l.mu.Lock()
	hold, held := l.hold, l.held
	l.hold = nil
	l.mu.Unlock()
	if hold != nil {
		close(held)
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return l.base.WatchWithContext(ctx, o)
}

// The client-go interfaces, for a ListerWatcher client-go's reflector would take.
func (l *recordingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), o)
}
func (l *recordingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), o)
}

// holdNextWatch makes the next plain watch wait; it returns when that watch is waiting, and
// release lets it go.
func (l *recordingLW) holdNextWatch() (waiting <-chan struct{}, release func()) {
	hold, held := make(chan struct{}), make(chan struct{})
	l.mu.Lock()
	l.hold, l.held = hold, held
	l.mu.Unlock()
	return held, func() { close(hold) }
}

// counter counts what a handler without a resync period is given.
type counter struct {
	adds, updates, noop, deletes atomic.Int32
	deleted                      chan string
}

func (c *counter) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.adds.Add(1) },
		UpdateFunc: func(old, obj any) {
			c.updates.Add(1)
			if old.(*corev1.ConfigMap).ResourceVersion == obj.(*corev1.ConfigMap).ResourceVersion {
				c.noop.Add(1)
			}
		},
		DeleteFunc: func(obj any) {
			c.deletes.Add(1)
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				c.deleted <- d.Key
			}
		},
	}
}

// docs/semantics.md, "Relists" and "Streaming list (WatchList)": over a client-go
// ListerWatcher, as client-go's reflector does by default, the initial state and a relist
// stream through the ListerWatcher's Watch with sendInitialEvents, item by item into the
// informer, and the List is never called. The relist hands the handler what changed only.
func TestListerWatcherStreamsFullStatesAsWatchLists(t *testing.T) {
	s, url := startSim(t, 20)
	lw := newRecordingLW(t, url)
	inf := informer.WithOptions(quiet)(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	c := &counter{deleted: make(chan string, 10)}
	_, err := inf.AddEventHandler(c.handler())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
	require.Len(t, inf.GetIndexer().List(), 20)
	require.EqualValues(t, 1, lw.streams.Load())

	// The watch ends; while the informer's re-watch waits, objects change and the history is
	// compacted, so the re-watch gets 410 Expired and the informer relists.
	waiting, release := lw.holdNextWatch()
	s.DropWatches()
	<-waiting
	_, err = s.Update(sim.ConfigMaps, "default", "cm-1", map[string]string{"changed": "yes"})
	require.NoError(t, err)
	_, err = s.Delete(sim.ConfigMaps, "default", "cm-2")
	require.NoError(t, err)
	_, err = s.Create(sim.ConfigMaps, "default", "new", nil)
	require.NoError(t, err)
	s.Compact()
	release()
	select {
	case key := <-c.deleted: // the relist's end
		require.Equal(t, "default/cm-2", key)
	case <-time.After(time.Minute):
		t.Fatal("no relist within a minute")
	}
	require.EqualValues(t, 0, lw.lists.Load(), "no LIST: full states come as watch-lists")
	require.EqualValues(t, 2, lw.streams.Load(), "the initial state and the relist")
	require.EqualValues(t, 21, c.adds.Load(), "20 initial adds and the new object")
	require.EqualValues(t, 1, c.updates.Load(), "only the changed object is an update")
	require.EqualValues(t, 0, c.noop.Load())
	require.Len(t, inf.GetIndexer().List(), 20)
}

// A server that refuses watch-list is listed from then on; a ListerWatcher that says it lacks
// watch-list semantics, as client-go's fakes do, is never asked for one.
func TestListerWatcherFallsBackToList(t *testing.T) {
	for name, tc := range map[string]struct {
		refuse  bool
		wrap    bool
		streams int32
	}{
		"the server refuses watch-list":       {refuse: true, streams: 1},
		"the ListerWatcher has no watch-list": {wrap: true, streams: 0},
	} {
		t.Run(name, func(t *testing.T) {
			_, url := startSim(t, 5)
			rec := newRecordingLW(t, url)
			rec.refuse = tc.refuse
			var lw cache.ListerWatcher = rec
			if tc.wrap {
				lw = cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{ListWithContextFunc: rec.ListWithContext, WatchFuncWithContext: rec.WatchWithContext}, listOnly{})
			}
			inf := informer.WithOptions(quiet)(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); inf.RunWithContext(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))
			require.Len(t, inf.GetIndexer().List(), 5)
			require.EqualValues(t, 1, rec.lists.Load())
			require.EqualValues(t, tc.streams, rec.streams.Load())
		})
	}
}

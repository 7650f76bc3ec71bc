package listwatch_test

// Side by side: behaviours of client-go's Reflector that a store or a ListerWatcher can observe,
// checked on client-go's reflector and on rewatch's (driver.Run over this transport) with the
// same ListerWatcher fake and the same store. Each test states the behaviour it pins; the tests
// are this project's, written from client-go's documented behaviour.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/listwatch"
)

// reflectorRun is what a side-by-side test varies: how to run a reflector over lw into store
// until ctx is done.
type reflectorRun struct {
	name string
	run  func(ctx context.Context, t *testing.T, lw *cache.ListWatch, store cache.Store, o reflectorOptions)
}

// reflectorOptions are the options both reflectors take.
type reflectorOptions struct {
	resyncPeriod time.Duration
	shouldResync func() bool
	clock        clockx.Clock
}

// listOnly makes client-go's reflector list and watch, as rewatch does over a ListerWatcher.
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

var reflectors = []reflectorRun{
	{"client-go", func(ctx context.Context, _ *testing.T, lw *cache.ListWatch, store cache.Store, o reflectorOptions) {
		r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, listOnly{}), &corev1.ConfigMap{}, store,
			cache.ReflectorOptions{ResyncPeriod: o.resyncPeriod})
		r.ShouldResync = o.shouldResync
		r.RunWithContext(ctx)
	}},
	{"rewatch", func(ctx context.Context, t *testing.T, lw *cache.ListWatch, store cache.Store, o reflectorOptions) {
		tr, err := listwatch.New(lw, "configmaps", listwatch.WithExpectedType(&corev1.ConfigMap{}))
		require.NoError(t, err)
		err = driver.Run(ctx, driver.Config{Transport: tr, Store: store, Clock: o.clock, Logger: slog.New(slog.DiscardHandler),
			ResyncPeriod: o.resyncPeriod, ShouldResync: o.shouldResync})
		require.NoError(t, err)
	}},
}

// eachReflector runs test once per reflector.
func eachReflector(t *testing.T, test func(t *testing.T, r reflectorRun)) {
	for _, r := range reflectors {
		t.Run(r.name, func(t *testing.T) { test(t, r) })
	}
}

// start runs r in the background until ctx is done or the returned function, which waits until
// it returned, stops it.
func start(ctx context.Context, t *testing.T, r reflectorRun, lw *cache.ListWatch, store cache.Store, o reflectorOptions) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, t, lw, store, o)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	return stop
}

// calls records, in order, what was called on a watch.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(s string) {
	c.mu.Lock()
	c.log = append(c.log, s)
	c.mu.Unlock()
}

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.log...)
}

// recordingWatch is a watch whose ResultChan and Stop calls are recorded; Stop closes its
// channel, as a real watch's does.
func recordingWatch(c *calls, results chan watch.Event) watch.Interface {
	var once sync.Once
	return &watch.MockWatcher{
		ResultChanFunc: func() <-chan watch.Event { c.add("ResultChan"); return results },
		StopFunc:       func() { c.add("Stop"); once.Do(func() { close(results) }) },
	}
}

// emptyList is a LIST answer with no items at resourceVersion rv.
func emptyList(rv string) func(context.Context, metav1.ListOptions) (runtime.Object, error) {
	return func(context.Context, metav1.ListOptions) (runtime.Object, error) {
		return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}, nil
	}
}

// A watch the reflector opened is handed back as client-go's reflector hands it: its result
// channel is taken before anything else, and the watch is stopped once, last, whether the
// reflector stops while the watch is being opened or after the watch delivered events.
// (client-go takes the channel again at every event; rewatch takes it once.)
func TestReflectorTakesResultChanOnceThenStops(t *testing.T) {
	for name, events := range map[string]int{"stopped while opening": 0, "stopped after events": 3} {
		t.Run(name, func(t *testing.T) {
			eachReflector(t, func(t *testing.T, r reflectorRun) {
				var c calls
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				lw := &cache.ListWatch{
					ListWithContextFunc: emptyList("1"),
					WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
						results := make(chan watch.Event, events)
						for n := range events {
							results <- watch.Event{Type: watch.Added, Object: cm(fmt.Sprint("a", n), "2")}
						}
						if events == 0 {
							cancel() // the stop comes while the watch is being handed over
						}
						return recordingWatch(&c, results), nil
					},
				}
				store := cache.NewStore(cache.MetaNamespaceKeyFunc)
				stop := start(ctx, t, r, lw, store, reflectorOptions{})
				if events > 0 {
					require.Eventually(t, func() bool { return len(store.List()) == events }, 10*time.Second, time.Millisecond)
				} else {
					<-ctx.Done() // the watch has been opened
				}
				stop()
				got := c.get()
				require.NotEmpty(t, got)
				require.Equal(t, "ResultChan", got[0], "the watch was not read before it was stopped: %v", got)
				require.Equal(t, "Stop", got[len(got)-1], "the watch was not stopped last: %v", got)
				require.Equal(t, len(got)-1, slices.Index(got, "Stop"), "the watch was stopped more than once: %v", got)
			})
		})
	}
}

// The same, deterministically on the transport alone: a stop that refuses the watch's opening
// (the driver's emit returns false once its request is aborted) still finds the result channel
// taken before the watch is stopped.
func TestWatchRefusedAtOpeningIsReadThenStopped(t *testing.T) {
	var c calls
	lw := &cache.ListWatch{WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
		return recordingWatch(&c, make(chan watch.Event)), nil
	}}
	tr, err := listwatch.New(lw, "configmaps")
	require.NoError(t, err)
	tr.Watch(context.Background(), fsm.Command{Kind: fsm.CmdOpenWatch, Request: 1}, func(fsm.Event) bool { return false })
	require.Equal(t, []string{"ResultChan", "Stop"}, c.get())
}

// progressStore is a cache.Store that also follows the reflector's progress, as client-go's
// cache.ResourceVersionUpdater lets a store do.
type progressStore struct {
	cache.Store
	mu       sync.Mutex
	versions []string
}

var _ cache.ResourceVersionUpdater = (*progressStore)(nil)

func (s *progressStore) UpdateResourceVersion(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versions = append(s.versions, rv)
}

func (s *progressStore) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.versions)
}

// A store that follows the reflector's progress is told the resourceVersion after every event of
// the watch, object events and bookmarks alike; the LIST's resourceVersion comes with its
// Replace, not through UpdateResourceVersion.
func TestReflectorTellsTheStoreItsProgress(t *testing.T) {
	eachReflector(t, func(t *testing.T, r reflectorRun) {
		lw := &cache.ListWatch{
			ListWithContextFunc: emptyList("1"),
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				fw := watch.NewFakeWithChanSize(3, false)
				if o.ResourceVersion == "1" {
					fw.Add(cm("a", "2"))
					fw.Modify(cm("a", "3"))
					fw.Action(watch.Bookmark, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}})
				}
				return fw, nil
			},
		}
		store := &progressStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
		stop := start(context.Background(), t, r, lw, store, reflectorOptions{})
		require.Eventually(t, func() bool { return len(store.seen()) >= 3 }, 10*time.Second, time.Millisecond)
		stop()
		require.Equal(t, []string{"2", "3", "5"}, store.seen())
	})
}

// resyncStore is a cache.Store that counts its Resyncs.
type resyncStore struct {
	cache.Store
	resyncs atomic.Int64
}

func (s *resyncStore) Resync() error { s.resyncs.Add(1); return s.Store.Resync() }

// openWatch is a watch that stays open and delivers nothing.
func openWatch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

// With a resync period, the store's Resync is called every period while the reflector watches,
// unless ShouldResync, asked each period, says no.
func TestReflectorResyncsTheStore(t *testing.T) {
	const period = 10 * time.Millisecond
	eachReflector(t, func(t *testing.T, r reflectorRun) {
		t.Run("every period", func(t *testing.T) {
			lw := &cache.ListWatch{ListWithContextFunc: emptyList("1"), WatchFuncWithContext: openWatch}
			store := &resyncStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
			start(context.Background(), t, r, lw, store, reflectorOptions{resyncPeriod: period})
			require.Eventually(t, func() bool { return store.resyncs.Load() >= 3 }, 10*time.Second, time.Millisecond)
		})
		t.Run("unless ShouldResync says no", func(t *testing.T) {
			lw := &cache.ListWatch{ListWithContextFunc: emptyList("1"), WatchFuncWithContext: openWatch}
			store := &resyncStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
			var asked atomic.Int64
			stop := start(context.Background(), t, r, lw, store, reflectorOptions{resyncPeriod: period, shouldResync: func() bool {
				return asked.Add(1) > 3 // no to the first three
			}})
			require.Eventually(t, func() bool { return store.resyncs.Load() >= 1 }, 10*time.Second, time.Millisecond)
			stop()
			require.Greater(t, asked.Load(), int64(3))
			require.Equal(t, asked.Load()-3, store.resyncs.Load(), "a resync ShouldResync refused was made")
		})
	})
}

// A watch event whose object is not of the expected type is dropped with an error (through
// utilruntime.HandleError) and the watch goes on; an object without a name is passed to the
// store, which keys it as its key function does ("namespace/"), from a LIST and from a watch.
func TestReflectorDropsStrangersAndKeepsNamelessObjects(t *testing.T) {
	handlers := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	var reported atomic.Int64
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, _ error, msg string, _ ...any) {
		if strings.Contains(msg, "Unexpected watch event object type") {
			reported.Add(1)
		}
	}}
	eachReflector(t, func(t *testing.T, r reflectorRun) {
		reported.Store(0)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
				return &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
					Items: []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "listed", ResourceVersion: "1"}}}}, nil
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				fw := watch.NewFakeWithChanSize(3, false)
				if o.ResourceVersion == "1" {
					fw.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "stranger", Namespace: "ns", ResourceVersion: "2"}})
					fw.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", ResourceVersion: "3"}})
					fw.Add(cm("last", "4"))
				}
				return fw, nil
			},
		}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		stop := start(context.Background(), t, r, lw, store, reflectorOptions{})
		require.Eventually(t, func() bool { _, ok, _ := store.GetByKey("ns/last"); return ok }, 10*time.Second, time.Millisecond)
		stop()
		require.ElementsMatch(t, []string{"listed/", "watched/", "ns/last"}, store.ListKeys())
		require.EqualValues(t, 1, reported.Load(), "the stranger was not reported")
	})
}

package listwatch_test

// client-go's Reflector behaviours, checked on rewatch's reflector: driver.Run over this
// transport, into a client-go store. Each test is named TestClientGo<Name> after the test of
// client-go v0.37's tools/cache/reflector_test.go whose behaviour it checks — through the
// ListerWatcher and the store, since rewatch's reflector has none of client-go's insides
// (handleWatch, ListAndWatch, resyncChan) — and states it as docs/semantics.md has it. Where
// rewatch differs from client-go by design (docs/semantics.md, "Where rewatch differs from
// client-go by design"), the test checks rewatch's behaviour and says what client-go does. The
// tests are this project's. client-go's TestGetTypeDescriptionFromObject is checked on the
// informer that names a reflector (informer/clientgo_names_test.go). Run them with
// go test -race -run TestClientGo ./transport/listwatch/.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
	"github.com/rewatch/rewatch/transport/listwatch"
)

// reflectorRig is rewatch's reflector running over lw into store.
type reflectorRig struct {
	done    chan struct{}
	err     error
	cancel  context.CancelFunc
	mu      sync.Mutex
	lastRV  string
	waits   []time.Duration
	causes  []fsm.Cause
	watches atomic.Int32
}

// reflectorConfig changes the rig's driver.Config before it runs.
type reflectorConfig func(*driver.Config)

// runReflector runs rewatch's reflector over lw (expecting pods, or example) into store until
// ctx is done or the rig is stopped; the test's end stops it.
func runReflector(ctx context.Context, t *testing.T, lw cache.ListerWatcher, store driver.Store, mods ...reflectorConfig) *reflectorRig {
	return runReflectorOf(ctx, t, &corev1.Pod{}, lw, store, mods...)
}

func runReflectorOf(ctx context.Context, t *testing.T, example kruntime.Object, lw cache.ListerWatcher, store driver.Store, mods ...reflectorConfig) *reflectorRig {
	t.Helper()
	tr, err := listwatch.New(lw, "pods", listwatch.WithExpectedType(example))
	require.NoError(t, err)
	rig := &reflectorRig{done: make(chan struct{})}
	ctx, rig.cancel = context.WithCancel(ctx)
	cfg := driver.Config{Transport: tr, Store: store, Logger: slog.New(slog.DiscardHandler),
		Observers: []driver.Observer{driver.ObserverFunc(rig.observe)}}
	for _, m := range mods {
		m(&cfg)
	}
	go func() {
		defer close(rig.done)
		rig.err = driver.Run(ctx, cfg)
	}()
	t.Cleanup(rig.stop)
	return rig
}

func (r *reflectorRig) observe(t driver.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastRV = t.Snapshot.LastRV
	r.causes = append(r.causes, t.Cause)
	for _, c := range t.Commands {
		switch c.Kind {
		case fsm.CmdArmTimer:
			r.waits = append(r.waits, c.Delay)
		case fsm.CmdOpenWatch:
			r.watches.Add(1)
		}
	}
}

// stop stops the reflector and waits for Run to return.
func (r *reflectorRig) stop() {
	r.cancel()
	<-r.done
}

func (r *reflectorRig) rv() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRV
}

func (r *reflectorRig) armed() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits)
}

func withPolicy(p transitions.Config) reflectorConfig {
	return func(c *driver.Config) { c.Policy = p }
}

// withClock runs the reflector on clock, with the silence bounds off: their deadlines would be
// timers on the clock too, and a test moves it wait by wait (waitsOn). Apply it after
// withPolicy.
func withClock(clock clockx.Clock) reflectorConfig {
	return func(c *driver.Config) {
		c.Clock = clock
		c.Policy.WatchSilence, c.Policy.ActiveWatchSilence = -1, -1
	}
}

// waitsOn moves a mock clock past every wait the reflector arms, until n waits have passed.
func waitsOn(t *testing.T, clock *clockx.Mock, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range n {
		require.NoError(t, clock.WaitForTimers(ctx, 1), "no wait armed")
		d := slices.Max(clock.ArmedDurations())
		clock.Add(d)
	}
}

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
}

func podList(rv string, pods ...*corev1.Pod) *corev1.PodList {
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	return list
}

func expiredErr() error {
	return apierrors.NewResourceExpired("The resourceVersion for the provided watch is too old.")
}

func within(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen", what)
	}
}

// An ERROR event that carries no Status ends the watch, and the watch is stopped: its result
// channel closes.
func TestClientGoCloseWatchChannelOnError(t *testing.T) {
	fw := watch.NewFake()
	var first atomic.Bool
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if first.CompareAndSwap(false, true) {
				return fw, nil
			}
			return watch.NewFake(), nil
		},
	}
	runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc), withPolicy(transitions.Config{WatchList: false}))
	fw.Error(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bar"}})
	select {
	case _, open := <-fw.ResultChan():
		require.False(t, open, "the watch was left open after its error")
	case <-time.After(30 * time.Second):
		t.Fatal("the watch was not stopped")
	}
}

// A stop ends Run and stops the watch open at the time.
func TestClientGoRunUntil(t *testing.T) {
	fw := watch.NewFake()
	lw := &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}
	rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc))
	fw.Add(pod("bar", "2")) // taken: the reflector is in the watch
	rig.cancel()
	within(t, rig.done, "Run's return")
	_, open := <-fw.ResultChan()
	require.False(t, open, "the watch was left open after the stop")
	require.NoError(t, rig.err)
}

// With a resync period the store is resynced, period after period.
func TestClientGoReflectorResyncChan(t *testing.T) {
	lw := &cache.ListWatch{ListWithContextFunc: emptyList("1"), WatchFuncWithContext: openWatch}
	store := &resyncStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	runReflector(context.Background(), t, lw, store, func(c *driver.Config) { c.ResyncPeriod = time.Millisecond })
	require.Eventually(t, func() bool { return store.resyncs.Load() >= 2 }, 30*time.Second, time.Millisecond)
}

// A reflector stopped before it runs calls neither List nor Watch.
func TestClientGoReflectorWatchStoppedBefore(t *testing.T) {
	var calls atomic.Int32
	lw := &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (kruntime.Object, error) { calls.Add(1); return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { calls.Add(1); return watch.NewFake(), nil },
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rig := runReflector(ctx, t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc))
	within(t, rig.done, "Run's return")
	require.NoError(t, rig.err)
	require.Zero(t, calls.Load(), "List or Watch called after the stop")
}

// A reflector stopped while it watches stops the watch.
func TestClientGoReflectorWatchStoppedAfter(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var watchers []*watch.FakeWatcher
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			time.AfterFunc(10*time.Millisecond, cancel)
			w := watch.NewFake()
			mu.Lock()
			watchers = append(watchers, w)
			mu.Unlock()
			return w, nil
		},
	}
	rig := runReflector(ctx, t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc))
	within(t, rig.done, "Run's return")
	require.NoError(t, rig.err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, watchers, 1)
	require.True(t, watchers[0].IsStopped(), "the watch was not stopped")
}

// handoverCase opens one recorded watch: ResultChan and Stop each called once, in that order,
// whatever ends it.
func handoverCase(t *testing.T, open func(cancel context.CancelFunc, c *calls) watch.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c calls
	var first atomic.Bool
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if first.CompareAndSwap(false, true) {
				return open(cancel, &c), nil
			}
			return watch.NewFake(), nil // the watches after the recorded one
		},
	}
	rig := runReflector(ctx, t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc))
	require.Eventually(t, func() bool { return slices.Contains(c.get(), "Stop") }, 30*time.Second, time.Millisecond)
	rig.stop()
	require.Equal(t, []string{"ResultChan", "Stop"}, c.get())
}

// A watch handed over while the reflector is being stopped has its result channel taken, then
// is stopped.
func TestClientGoReflectorHandleWatchStoppedBefore(t *testing.T) {
	handoverCase(t, func(cancel context.CancelFunc, c *calls) watch.Interface {
		cancel()
		return recordingWatch(c, make(chan watch.Event))
	})
}

// A watch the reflector reads when it is stopped is stopped once, after its result channel
// was taken.
func TestClientGoReflectorHandleWatchStoppedAfter(t *testing.T) {
	handoverCase(t, func(cancel context.CancelFunc, c *calls) watch.Interface {
		results := make(chan watch.Event)
		return &watch.MockWatcher{
			ResultChanFunc: func() <-chan watch.Event {
				c.add("ResultChan")
				time.AfterFunc(10*time.Millisecond, cancel)
				return results
			},
			StopFunc: func() { c.add("Stop") },
		}
	})
}

// A watch whose result channel was closed before it was read is stopped once, after its result
// channel was taken.
func TestClientGoReflectorHandleWatchResultChanClosedBefore(t *testing.T) {
	handoverCase(t, func(_ context.CancelFunc, c *calls) watch.Interface {
		results := make(chan watch.Event)
		close(results)
		return &watch.MockWatcher{
			ResultChanFunc: func() <-chan watch.Event { c.add("ResultChan"); return results },
			StopFunc:       func() { c.add("Stop") },
		}
	})
}

// A watch whose result channel closes while the reflector reads it is stopped once, after its
// result channel was taken.
func TestClientGoReflectorHandleWatchResultChanClosedAfter(t *testing.T) {
	handoverCase(t, func(_ context.CancelFunc, c *calls) watch.Interface {
		results := make(chan watch.Event)
		return &watch.MockWatcher{
			ResultChanFunc: func() <-chan watch.Event {
				c.add("ResultChan")
				time.AfterFunc(10*time.Millisecond, func() { close(results) })
				return results
			},
			StopFunc: func() { c.add("Stop") },
		}
	})
}

// A watch's events reach the store — an object of another type dropped, a delete, an update, an
// add — and the reflector's resourceVersion is the last event's.
func TestClientGoReflectorWatchHandler(t *testing.T) {
	fw := watch.NewFakeWithChanSize(4, false)
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			return podList("1", pod("foo", "1"), pod("bar", "1")), nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return fw, nil },
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	handlers := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	utilruntime.ErrorHandlers = nil // the dropped Service is reported; nothing to see here
	rig := runReflector(context.Background(), t, lw, store)
	fw.Add(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "rejected"}})
	fw.Delete(pod("foo", ""))
	fw.Modify(pod("bar", "55"))
	fw.Add(pod("baz", "32"))
	require.Eventually(t, func() bool { return rig.rv() == "32" }, 30*time.Second, time.Millisecond)
	rig.stop()
	for _, want := range []struct {
		name, rv string
		exists   bool
	}{{"foo", "", false}, {"rejected", "", false}, {"bar", "55", true}, {"baz", "32", true}} {
		obj, exists, err := store.GetByKey(want.name)
		require.NoError(t, err)
		require.Equal(t, want.exists, exists, want.name)
		if exists {
			require.Equal(t, want.rv, obj.(*corev1.Pod).ResourceVersion, want.name)
		}
	}
}

// A reflector stopped at once returns at once.
func TestClientGoReflectorStopWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rig := runReflector(ctx, t, &cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}, cache.NewStore(cache.MetaNamespaceKeyFunc))
	within(t, rig.done, "Run's return")
	require.NoError(t, rig.err)
}

// With watch-list the initial state is one watch (sendInitialEvents, bookmarks, NotOlderThan,
// no resourceVersion) and no LIST; without, a LIST at RV 0 by pages of 500, then a watch from
// the LIST's resourceVersion. Either way the store is given every change in order.
func TestClientGoReflectorListAndWatch(t *testing.T) {
	for _, tc := range []struct {
		name        string
		watchList   bool
		list        *corev1.PodList
		events      []watch.Event
		wantLists   []metav1.ListOptions
		wantWatches []metav1.ListOptions
	}{
		{
			name:      "UseWatchList enabled",
			watchList: true,
			events: []watch.Event{
				{Type: watch.Added, Object: pod("foo", "1")},
				{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "foo", ResourceVersion: "1",
					Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
			},
			wantWatches: []metav1.ListOptions{{AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
				SendInitialEvents: new(true)}},
		},
		{
			name:        "UseWatchList disabled",
			list:        podList("1", pod("foo", "1")),
			wantLists:   []metav1.ListOptions{{ResourceVersion: "0", Limit: 500}},
			wantWatches: []metav1.ListOptions{{AllowWatchBookmarks: true, ResourceVersion: "1"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := append(tc.events,
				watch.Event{Type: watch.Modified, Object: pod("foo", "2")},
				watch.Event{Type: watch.Added, Object: pod("bar", "3")},
				watch.Event{Type: watch.Added, Object: pod("baz", "4")},
				watch.Event{Type: watch.Added, Object: pod("qux", "5")},
				watch.Event{Type: watch.Added, Object: pod("zoo", "6")},
			)
			var mu sync.Mutex
			var lists, watches []metav1.ListOptions
			lw := &cache.ListWatch{
				ListFunc: func(o metav1.ListOptions) (kruntime.Object, error) {
					mu.Lock()
					defer mu.Unlock()
					lists = append(lists, o)
					return tc.list, nil
				},
				WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
					mu.Lock()
					defer mu.Unlock()
					o.TimeoutSeconds = nil // drawn at random
					watches = append(watches, o)
					fw := watch.NewFakeWithChanSize(len(events), false)
					for _, e := range events {
						fw.Action(e.Type, e.Object)
					}
					return fw, nil
				},
			}
			fifo := cache.NewFIFO(cache.MetaNamespaceKeyFunc)
			rig := runReflector(context.Background(), t, lw, fifo, withPolicy(transitions.Config{WatchList: tc.watchList}))
			require.Eventually(t, func() bool { return rig.rv() == "6" }, 30*time.Second, time.Millisecond)
			for _, want := range []*corev1.Pod{pod("foo", "2"), pod("bar", "3"), pod("baz", "4"), pod("qux", "5"), pod("zoo", "6")} {
				got := popOne(t, fifo).(*corev1.Pod)
				require.Equal(t, want.Name, got.Name)
				require.Equal(t, want.ResourceVersion, got.ResourceVersion, want.Name)
			}
			rig.stop()
			mu.Lock()
			defer mu.Unlock()
			require.Equal(t, tc.wantLists, lists)
			require.Equal(t, tc.wantWatches, watches)
		})
	}
}

// popOne takes the next item of a FIFO, waiting for one.
func popOne(t *testing.T, fifo *cache.FIFO) any {
	t.Helper()
	var got any
	_, err := fifo.Pop(func(obj any, _ bool) error { got = obj; return nil })
	require.NoError(t, err)
	return got
}

// LIST and watch failures are retried and the store holds each full state the reflector got.
// A watch that fails is re-opened from the last resourceVersion, not relisted (docs/semantics.md,
// "Resume first, relist second": client-go's ListAndWatch returns the error, and its next one
// lists).
func TestClientGoReflectorListAndWatchWithErrors(t *testing.T) {
	var mu sync.Mutex
	lists := []func() (kruntime.Object, error){
		func() (kruntime.Object, error) { return nil, errors.New("a list error") },
		func() (kruntime.Object, error) { return podList("1"), nil },
	}
	watches := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return endedAfter(watch.Event{Type: watch.Added, Object: pod("foo", "2")}, watch.Event{Type: watch.Added, Object: pod("bar", "3")}), nil
		},
		func() (watch.Interface, error) { return nil, errors.New("a watch error") },
		func() (watch.Interface, error) {
			return fakeWith(watch.Event{Type: watch.Deleted, Object: pod("foo", "4")}, watch.Event{Type: watch.Added, Object: pod("qux", "5")}), nil
		},
	}
	var listed, watched []string
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (kruntime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			listed = append(listed, o.ResourceVersion)
			next := lists[0]
			if len(lists) > 1 {
				lists = lists[1:]
			}
			return next()
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			mu.Lock()
			defer mu.Unlock()
			watched = append(watched, o.ResourceVersion)
			if len(watches) == 0 {
				return watch.NewFake(), nil
			}
			next := watches[0]
			watches = watches[1:]
			return next()
		},
	}
	clock := clockx.NewMock(time.Now())
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store, withClock(clock))
	waitsOn(t, clock, 1) // the failed LIST's
	require.Eventually(t, func() bool { return rig.rv() == "3" }, 30*time.Second, time.Millisecond)
	require.ElementsMatch(t, []string{"foo", "bar"}, store.ListKeys())
	waitsOn(t, clock, 1) // the failed watch's
	require.Eventually(t, func() bool { return rig.rv() == "5" }, 30*time.Second, time.Millisecond)
	rig.stop()
	require.ElementsMatch(t, []string{"bar", "qux"}, store.ListKeys())
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"0", "0"}, listed, "a LIST retried after its failure, and no relist after the watch's")
	require.Equal(t, []string{"1", "3", "3"}, watched[:3], "the failed watch re-opened from the last resourceVersion")
}

// endedAfter is a watch that delivers events, then ends.
func endedAfter(events ...watch.Event) watch.Interface {
	fw := watch.NewFakeWithChanSize(len(events), false)
	for _, e := range events {
		fw.Action(e.Type, e.Object)
	}
	fw.Stop()
	return fw
}

func fakeWith(events ...watch.Event) watch.Interface {
	fw := watch.NewFakeWithChanSize(len(events), false)
	for _, e := range events {
		fw.Action(e.Type, e.Object)
	}
	return fw
}

// refusedWatches is a ListerWatcher whose first n watches are refused a connection.
func refusedWatches(n int) (cache.ListerWatcher, *atomic.Int32) {
	var refused atomic.Int32
	return &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if int(refused.Load()) < n {
				refused.Add(1)
				return nil, syscall.ECONNREFUSED
			}
			return watch.NewFake(), nil
		},
	}, &refused
}

// floored is what rewatch waits for a delay d of the backoff: at least transitions.MinWait
// (docs/semantics.md, "Floor").
func floored(d time.Duration) time.Duration { return max(d, transitions.MinWait) }

// A watch refused a connection is re-opened after the backoff's next step, each step growing to
// the cap, never shorter than the 100 ms floor (docs/semantics.md, "Backoff", "Floor"; client-go
// waits its backoff's 1 ms first steps as they are).
func TestClientGoReflectorListAndWatchInitConnBackoff(t *testing.T) {
	const maxBackoff = 50 * time.Millisecond
	for _, fails := range []int{5, 40} {
		t.Run(fmt.Sprintf("%d connection failures", fails), func(t *testing.T) {
			policy := backoff.Backoff{Duration: time.Millisecond, Cap: maxBackoff, Steps: 1000, Factor: 2, Jitter: 0}
			lw, refused := refusedWatches(fails)
			clock := clockx.NewMock(time.Unix(0, 0))
			rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc),
				withPolicy(transitions.Config{Backoff: policy}), withClock(clock))
			waitsOn(t, clock, fails)
			require.Eventually(t, func() bool { return rig.watches.Load() == int32(fails+1) }, 30*time.Second, time.Millisecond)
			require.EqualValues(t, fails, refused.Load())
			var want []time.Duration
			for i := range fails {
				want = append(want, floored(min(time.Millisecond<<i, maxBackoff)))
			}
			require.Equal(t, want, rig.armed())
		})
	}
}

// A reflector takes the backoff it is given (Policy.Backoff), floored at 100 ms; without one it
// waits client-go's reflector backoff (800 ms, doubling, jitter 1.0, capped at 30 s).
func TestClientGoNewReflectorWithCustomBackoff(t *testing.T) {
	custom := backoff.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0, Steps: 100, Cap: 100 * time.Millisecond}
	for _, tc := range []struct {
		name   string
		policy backoff.Policy
		fails  int
		check  func(t *testing.T, waits []time.Duration)
	}{
		{"default backoff", nil, 2, func(t *testing.T, waits []time.Duration) {
			require.Len(t, waits, 2)
			require.True(t, waits[0] >= 800*time.Millisecond && waits[0] < 1600*time.Millisecond, "first wait %s", waits[0])
			require.True(t, waits[1] >= 1600*time.Millisecond && waits[1] < 3200*time.Millisecond, "second wait %s", waits[1])
		}},
		{"custom backoff", custom, 5, func(t *testing.T, waits []time.Duration) {
			require.Equal(t, []time.Duration{floored(10 * time.Millisecond), floored(20 * time.Millisecond), floored(40 * time.Millisecond),
				floored(80 * time.Millisecond), 100 * time.Millisecond}, waits)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw, _ := refusedWatches(tc.fails)
			clock := clockx.NewMock(time.Unix(0, 0))
			rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc),
				withPolicy(transitions.Config{Backoff: tc.policy}), withClock(clock))
			waitsOn(t, clock, tc.fails)
			require.Eventually(t, func() bool { return rig.watches.Load() == int32(tc.fails+1) }, 30*time.Second, time.Millisecond)
			tc.check(t, rig.armed())
		})
	}
}

// A 429 opening the watch, then a 429 as an ERROR event: each waited out — the server's
// Retry-After, 1 s here, honoured (docs/semantics.md, "Retry-After"; client-go waits its
// backoff) — then the watch re-opened, no LIST.
func TestClientGoBackoffOnTooManyRequests(t *testing.T) {
	tooMany := apierrors.NewTooManyRequests("too many requests", 1)
	var watches, lists atomic.Int32
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { lists.Add(1); return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			switch watches.Add(1) {
			case 1:
				return nil, tooMany
			case 2:
				w := watch.NewFakeWithChanSize(1, false)
				st := tooMany.Status()
				w.Error(&st)
				return w, nil
			}
			return watch.NewFake(), nil
		},
	}
	clock := clockx.NewMock(time.Unix(0, 0))
	rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc), withClock(clock))
	waitsOn(t, clock, 2)
	require.Eventually(t, func() bool { return watches.Load() == 3 }, 30*time.Second, time.Millisecond)
	waits := rig.armed()
	require.Len(t, waits, 2)
	// Each is the first Retry-After since the server accepted a request (the watch that
	// opened before the ERROR event), so each is waited exactly.
	require.Equal(t, []time.Duration{time.Second, time.Second}, waits)
	require.EqualValues(t, 1, lists.Load(), "a 429 relisted")
}

// 429s opening the watch never make a LIST: four refused watches, one LIST, five watches.
func TestClientGoNoRelistOnTooManyRequests(t *testing.T) {
	tooMany := apierrors.NewTooManyRequests("too many requests", 1)
	var watches, lists atomic.Int32
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { lists.Add(1); return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if watches.Add(1) < 5 {
				return nil, tooMany
			}
			return watch.NewFake(), nil
		},
	}
	clock := clockx.NewMock(time.Unix(0, 0))
	runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc), withClock(clock))
	waitsOn(t, clock, 4)
	require.Eventually(t, func() bool { return watches.Load() == 5 }, 30*time.Second, time.Millisecond)
	require.EqualValues(t, 1, lists.Load())
}

// InternalErrors on the watch are ridden out by re-watching from the last resourceVersion until
// the streak is 30 s old and has re-watched 3 times; then the reflector relists (docs/semantics.md,
// "The InternalError window"; client-go relists at the first one unless
// MaxInternalErrorRetryDuration is set, and then re-watches within that duration).
func TestClientGoRetryInternalError(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcdserver: no leader"))
	var lists atomic.Int32
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { lists.Add(1); return podList("1"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(1, false)
			st := internal.Status()
			w.Error(&st)
			return w, nil
		},
	}
	clock := clockx.NewMock(time.Unix(0, 0))
	b := backoff.Reflector()
	b.Jitter = 0
	rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc),
		withPolicy(transitions.Config{Backoff: b}), withClock(clock))
	// 0.8, 1.6, 3.2, 6.4, 12.8 s: after five waits the streak is 24.8 s old, after six 49.6 s.
	waitsOn(t, clock, 6)
	require.Eventually(t, func() bool { return lists.Load() == 2 }, 30*time.Second, time.Millisecond, "no relist once the streak was spent")
	var internals []fsm.Cause
	rig.mu.Lock()
	for _, c := range rig.causes {
		if c == fsm.CauseInternalErrorInWindow || c == fsm.CauseInternalErrorPastWindow {
			internals = append(internals, c)
		}
	}
	rig.mu.Unlock()
	require.GreaterOrEqual(t, len(internals), 7)
	require.Equal(t, slices.Repeat([]fsm.Cause{fsm.CauseInternalErrorInWindow}, 6), internals[:6], "re-watches inside the window")
	require.Equal(t, fsm.CauseInternalErrorPastWindow, internals[6], "the error that relisted")
}

// A store's Resync is called every period; one that fails stops the reflector with its error
// (docs/semantics.md, "Stores": client-go ends that watch, and its ListAndWatch returns nil).
func TestClientGoReflectorResync(t *testing.T) {
	var iterations atomic.Int32
	failed := errors.New("expected resync reached")
	store := &cache.FakeCustomStore{
		ResyncFunc: func() error {
			if iterations.Add(1) == 2 {
				return failed
			}
			return nil
		},
		ReplaceFunc: func([]any, string) error { return nil },
	}
	lw := &cache.ListWatch{ListWithContextFunc: emptyList("0"), WatchFuncWithContext: openWatch}
	rig := runReflector(context.Background(), t, lw, store, func(c *driver.Config) { c.ResyncPeriod = time.Millisecond })
	within(t, rig.done, "the reflector's stop")
	require.ErrorIs(t, rig.err, failed)
	require.EqualValues(t, 2, iterations.Load())
}

// pagedPods answers a LIST from ten pods in pages of limit, by continue tokens C1, C2, … at
// resourceVersion 10; check sees each request's options.
func pagedPods(t *testing.T, check func(metav1.ListOptions)) func(metav1.ListOptions) (kruntime.Object, error) {
	return func(o metav1.ListOptions) (kruntime.Object, error) {
		check(o)
		var pods []*corev1.Pod
		for i := range 10 {
			pods = append(pods, pod(fmt.Sprintf("pod-%d", i), strconv.Itoa(i)))
		}
		from := 0
		if o.Continue != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(o.Continue, "C"))
			require.NoError(t, err)
			from = n * int(o.Limit)
		}
		to := len(pods)
		if o.Limit > 0 {
			to = min(from+int(o.Limit), len(pods))
		}
		list := podList("10", pods[from:to]...)
		if to < len(pods) {
			list.Continue = fmt.Sprintf("C%d", to/int(o.Limit))
		}
		return list, nil
	}
}

// A reflector with a page size lists by pages of that size, following the continue tokens.
func TestClientGoReflectorWatchListPageSize(t *testing.T) {
	lw := &cache.ListWatch{
		ListFunc: pagedPods(t, func(o metav1.ListOptions) {
			if o.Limit != 4 {
				t.Errorf("limit %d, not 4", o.Limit)
			}
		}),
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store, withPolicy(transitions.Config{PageSize: 4}))
	require.Eventually(t, func() bool { return rig.rv() == "10" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 10)
}

// expiringWatches is a WatchFunc whose watches the test ends with a 410, one per expire call.
type expiringWatches struct {
	mu      sync.Mutex
	current *watch.RaceFreeFakeWatcher
}

func (e *expiringWatches) watch(metav1.ListOptions) (watch.Interface, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.current = watch.NewRaceFreeFake()
	return e.current, nil
}

func (e *expiringWatches) expire(t *testing.T) {
	t.Helper()
	var w *watch.RaceFreeFakeWatcher
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		w, e.current = e.current, nil
		return w != nil
	}, 30*time.Second, time.Millisecond, "no watch open")
	st := expiredErr().(*apierrors.StatusError).ErrStatus
	w.Error(&st)
}

// listRecorder records the resourceVersions (and limits, continues) LISTs ask for.
type listRecorder struct {
	mu   sync.Mutex
	asks []metav1.ListOptions
}

func (r *listRecorder) note(o metav1.ListOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asks = append(r.asks, metav1.ListOptions{ResourceVersion: o.ResourceVersion, Limit: o.Limit, Continue: o.Continue})
}

func (r *listRecorder) rvs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.asks {
		out = append(out, a.ResourceVersion)
	}
	return out
}

// A relist at a known resourceVersion, where the LIST at RV 0 came back whole (a watch cache
// serves the resource), asks for the whole list at that resourceVersion, without a limit.
func TestClientGoReflectorNotPaginatingNotConsistentReads(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	lw := &cache.ListWatch{ListFunc: func(o metav1.ListOptions) (kruntime.Object, error) {
		rec.note(o)
		return pagedPods(t, func(metav1.ListOptions) {})(metav1.ListOptions{ResourceVersion: o.ResourceVersion})
	}, WatchFunc: ew.watch}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	runReflector(context.Background(), t, lw, store)
	ew.expire(t)
	require.Eventually(t, func() bool { return len(rec.rvs()) == 2 }, 30*time.Second, time.Millisecond)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, metav1.ListOptions{ResourceVersion: "10"}, rec.asks[1], "the relist")
	require.Len(t, store.List(), 10)
}

// A LIST at RV 0 answered in pages says no watch cache serves the resource: relists page too,
// by the default 500.
func TestClientGoReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	lw := &cache.ListWatch{ListFunc: func(o metav1.ListOptions) (kruntime.Object, error) {
		rec.note(o)
		if o.Limit != 500 {
			t.Errorf("limit %d, not 500", o.Limit)
		}
		o.Limit = 4 // the server pages at 4 whatever the limit asked
		return pagedPods(t, func(metav1.ListOptions) {})(o)
	}, WatchFunc: ew.watch}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store)
	require.Eventually(t, func() bool { return rig.rv() == "10" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 10)
	ew.expire(t)
	require.Eventually(t, func() bool { return len(rec.rvs()) == 6 }, 30*time.Second, time.Millisecond)
	require.Equal(t, []string{"0", "", "", "10", "", ""}, rec.rvs(), "three pages, twice")
	require.Len(t, store.List(), 10)
}

// byRV answers LISTs by resourceVersion from lists; a resourceVersion it lacks fails the test.
func byRV(t *testing.T, rec *listRecorder, lists map[string]func() (kruntime.Object, error)) func(metav1.ListOptions) (kruntime.Object, error) {
	return func(o metav1.ListOptions) (kruntime.Object, error) {
		rec.note(o)
		answer, ok := lists[o.ResourceVersion]
		if !ok {
			t.Errorf("unexpected LIST at %q", o.ResourceVersion)
			return nil, fmt.Errorf("unexpected LIST at %q", o.ResourceVersion)
		}
		return answer()
	}
}

func pods(n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		out = append(out, pod(fmt.Sprintf("pod-%d", i), strconv.Itoa(i)))
	}
	return out
}

// A relist asks for the last resourceVersion: the first LIST at 0, the relist at 10.
func TestClientGoReflectorResyncWithResourceVersion(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	lw := &cache.ListWatch{ListFunc: byRV(t, &rec, map[string]func() (kruntime.Object, error){
		"0":  func() (kruntime.Object, error) { return podList("10", pods(4)...), nil },
		"10": func() (kruntime.Object, error) { return podList("11", pods(8)...), nil },
	}), WatchFunc: ew.watch}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store)
	require.Eventually(t, func() bool { return rig.rv() == "10" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 4)
	ew.expire(t)
	require.Eventually(t, func() bool { return rig.rv() == "11" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 8)
	require.Equal(t, []string{"0", "10"}, rec.rvs())
}

// A relist whose resourceVersion has expired asks again as a consistent read (""), at once.
func TestClientGoReflectorExpiredExactResourceVersion(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	lw := &cache.ListWatch{ListFunc: byRV(t, &rec, map[string]func() (kruntime.Object, error){
		"0":  func() (kruntime.Object, error) { return podList("10", pods(4)...), nil },
		"10": func() (kruntime.Object, error) { return nil, expiredErr() },
		"":   func() (kruntime.Object, error) { return podList("11", pods(8)...), nil },
	}), WatchFunc: ew.watch}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store)
	require.Eventually(t, func() bool { return rig.rv() == "10" }, 30*time.Second, time.Millisecond)
	ew.expire(t)
	require.Eventually(t, func() bool { return rig.rv() == "11" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 8)
	require.Equal(t, []string{"0", "10", ""}, rec.rvs())
}

// A continuation page whose token expired is replaced by one full LIST at the relist's
// resourceVersion. (Relists page here because the reflector is told to, PageRelists, as
// client-go's does with an explicit page size: by default a relist at a known RV is one whole
// LIST, docs/semantics.md "Requests".)
func TestClientGoReflectorFullListIfExpired(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	all := pods(8)
	lw := &cache.ListWatch{ListFunc: func(o metav1.ListOptions) (kruntime.Object, error) {
		rec.note(o)
		switch key := [3]string{o.ResourceVersion, o.Continue, strconv.FormatInt(o.Limit, 10)}; key {
		case [3]string{"0", "", "4"}:
			return podList("10", all[:4]...), nil
		case [3]string{"10", "", "4"}:
			l := podList("11", all[:4]...)
			l.Continue = "C1"
			return l, nil
		case [3]string{"", "C1", "4"}:
			return nil, expiredErr()
		case [3]string{"10", "", "0"}:
			return podList("11", all...), nil
		default:
			t.Errorf("unexpected LIST %v", key)
			return nil, fmt.Errorf("unexpected LIST %v", key)
		}
	}, WatchFunc: ew.watch}
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	rig := runReflector(context.Background(), t, lw, store, withPolicy(transitions.Config{PageSize: 4, PageRelists: true}))
	require.Eventually(t, func() bool { return rig.rv() == "10" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 4)
	ew.expire(t)
	require.Eventually(t, func() bool { return rig.rv() == "11" }, 30*time.Second, time.Millisecond)
	require.Len(t, store.List(), 8)
	require.Equal(t, []string{"0", "10", "", "10"}, rec.rvs())
}

// A relist answered "too large resource version" — as a cause type, as a cause's message
// (kube-apiserver 1.17.0–1.18.5), or in the Status's message (before 1.17) — asks again as a
// consistent read ("") at once.
func TestClientGoReflectorFullListIfTooLarge(t *testing.T) {
	var rec listRecorder
	var ew expiringWatches
	var mu sync.Mutex
	version := 30
	tooLarge := func(msg string, causes ...metav1.StatusCause) func() (kruntime.Object, error) {
		return func() (kruntime.Object, error) {
			err := apierrors.NewTimeoutError(msg, 1)
			err.ErrStatus.Details.Causes = causes
			return nil, err
		}
	}
	lw := &cache.ListWatch{ListFunc: byRV(t, &rec, map[string]func() (kruntime.Object, error){
		"0":  func() (kruntime.Object, error) { return podList("20"), nil },
		"20": tooLarge("too large resource version", metav1.StatusCause{Type: metav1.CauseTypeResourceVersionTooLarge}),
		"30": tooLarge("too large resource version", metav1.StatusCause{Message: "Too large resource version"}),
		"40": tooLarge("Too large resource version"),
		"": func() (kruntime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			rv := strconv.Itoa(version)
			version += 10
			return podList(rv), nil
		},
	}), WatchFunc: ew.watch}
	rig := runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc))
	for _, rv := range []string{"20", "30", "40", "50"} {
		require.Eventually(t, func() bool { return rig.rv() == rv }, 30*time.Second, time.Millisecond, "rv %s", rv)
		if rv != "50" {
			ew.expire(t)
		}
	}
	require.Equal(t, []string{"0", "20", "", "30", "", "40", ""}, rec.rvs())
}

// Given an unstructured example with a kind, the reflector keeps watch events of that group,
// version and kind only; an unstructured example without one, or a typed one, checks the Go
// type only.
func TestClientGoGetExpectedGVKFromObject(t *testing.T) {
	handlers := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	utilruntime.ErrorHandlers = nil
	gvk := schema.GroupVersionKind{Group: "mygroup", Version: "v1", Kind: "MyKind"}
	obj := func(name string, gvk schema.GroupVersionKind, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	}
	other := schema.GroupVersionKind{Group: "other", Version: "v1", Kind: "MyKind"}
	withGVK := &unstructured.Unstructured{}
	withGVK.SetGroupVersionKind(gvk)
	for _, tc := range []struct {
		name    string
		example kruntime.Object
		want    []string
	}{
		{"Unstructured type with GVK", withGVK, []string{"mine", "last"}},
		{"Unstructured type without GVK", &unstructured.Unstructured{}, []string{"mine", "theirs", "last"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := &cache.ListWatch{
				ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
					l := &unstructured.UnstructuredList{}
					l.SetResourceVersion("1")
					return l, nil
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
					return fakeWith(watch.Event{Type: watch.Added, Object: obj("mine", gvk, "2")},
						watch.Event{Type: watch.Added, Object: obj("theirs", other, "3")},
						watch.Event{Type: watch.Added, Object: obj("last", gvk, "4")}), nil
				},
			}
			store := cache.NewStore(cache.MetaNamespaceKeyFunc)
			rig := runReflectorOf(context.Background(), t, tc.example, lw, store)
			require.Eventually(t, func() bool { return rig.rv() == "4" }, 30*time.Second, time.Millisecond)
			rig.stop()
			require.ElementsMatch(t, tc.want, store.ListKeys())
		})
	}
}

// A watch asks the server for a timeout drawn from [WatchTimeoutMin, WatchTimeoutMax): by
// default [5 min, 10 min), as client-go; a shorter minimum is honoured (docs/semantics.md, "A
// caller's watch timeout below 5 minutes is honoured": client-go raises it to 5 minutes).
func TestClientGoWatchTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max time.Duration
		lo, hi   int64
	}{
		{"no timeout", 0, 0, 300, 600},
		{"small timeout honoured", time.Second, 2 * time.Second, 1, 2},
		{"30m timeout", 30 * time.Minute, time.Hour, 1800, 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan int64, 1)
			lw := &cache.ListWatch{
				ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("10"), nil },
				WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
					if o.TimeoutSeconds != nil {
						select {
						case got <- *o.TimeoutSeconds:
						default:
						}
					}
					return watch.NewFake(), nil
				},
			}
			runReflector(context.Background(), t, lw, cache.NewStore(cache.MetaNamespaceKeyFunc),
				withPolicy(transitions.Config{WatchTimeoutMin: tc.min, WatchTimeoutMax: tc.max}))
			select {
			case s := <-got:
				require.True(t, s >= tc.lo && s < tc.hi, "timeoutSeconds %d not in [%d, %d)", s, tc.lo, tc.hi)
			case <-time.After(30 * time.Second):
				t.Fatal("no watch")
			}
		})
	}
}

// A store that follows the reflector's progress is told the resourceVersion of every watch
// event: an add, an update, a bookmark, a delete.
func TestClientGoReflectorResourceVersionUpdate(t *testing.T) {
	var first atomic.Bool
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) { return podList("10"), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			if !first.CompareAndSwap(false, true) {
				return watch.NewFake(), nil
			}
			return fakeWith(
				watch.Event{Type: watch.Added, Object: pod("a", "10")},
				watch.Event{Type: watch.Modified, Object: pod("a", "20")},
				watch.Event{Type: watch.Bookmark, Object: pod("", "30")},
				watch.Event{Type: watch.Deleted, Object: pod("a", "40")}), nil
		},
	}
	store := &progressStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc)}
	rig := runReflector(context.Background(), t, lw, store)
	require.Eventually(t, func() bool { return len(store.seen()) >= 4 }, 30*time.Second, time.Millisecond)
	rig.stop()
	require.Equal(t, []string{"10", "20", "30", "40"}, store.seen())
}

// The objects a paged LIST puts in the store hold none of the pages' memory: once the store
// lets go of every object of a page, the page is collected, whatever objects of other pages the
// store keeps.
func TestClientGoReflectorListExtract(t *testing.T) {
	const pages, perPage = 5, 100
	const exempt = perPage / 4
	var mu sync.Mutex
	var firsts, kept []string
	served := 0
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
			for i := range perPage {
				list.Items = append(list.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", served*perPage+i), Namespace: "default",
					Labels: map[string]string{"label-key-1": "label-value-1"}}})
			}
			firsts = append(firsts, list.Items[0].Name)
			kept = append(kept, list.Items[exempt].Name)
			served++
			if served < pages {
				list.Continue = strconv.Itoa(served)
			}
			return list, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	store := cache.NewStore(func(obj any) (string, error) { return obj.(*corev1.Pod).Name, nil })
	rig := runReflector(context.Background(), t, lw, store, withPolicy(transitions.Config{PageSize: perPage}))
	require.Eventually(t, func() bool { return rig.rv() == "1" }, 30*time.Second, time.Millisecond)
	rig.stop()
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, store.List(), pages*perPage)
	collected := make(chan struct{}, len(firsts))
	for _, name := range firsts {
		obj, ok, err := store.GetByKey(name)
		require.NoError(t, err)
		require.True(t, ok, name)
		runtime.SetFinalizer(obj, func(any) { collected <- struct{}{} })
	}
	for _, key := range store.ListKeys() {
		if slices.Contains(kept, key) {
			continue
		}
		obj, _, _ := store.GetByKey(key)
		require.NoError(t, store.Delete(obj))
	}
	for range firsts {
		runtime.GC()
		select {
		case <-collected:
		case <-time.After(10 * time.Second):
			t.Fatal("a page was kept alive by an object of it the store still holds")
		}
	}
}

// replaceHooks is a store that runs hooks around its Replace.
type replaceHooks struct {
	cache.Store
	before, after func(rv string)
}

func (s *replaceHooks) Replace(list []any, rv string) error {
	s.before(rv)
	err := s.Store.Replace(list, rv)
	s.after(rv)
	return err
}

// A watch that ends with a StorageReadError — the server deleted an object it could not read —
// relists at once, and the relist's Replace takes the deleted object out of the store
// (docs/semantics.md, the InternalError row).
func TestClientGoReflectorReplacesStoreOnUnsafeDelete(t *testing.T) {
	mkPod := func(name, rv string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
	}
	all := []*corev1.Pod{mkPod("foo-1", "1"), mkPod("foo-2", "2"), mkPod("foo-3", "3")}
	corrupt := mkPod("foo", "4")
	var mu sync.Mutex
	lists := []*corev1.PodList{podList("3", all...), podList("5", all...)}
	var once sync.Once
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			l := lists[0]
			if len(lists) > 1 {
				lists = lists[1:]
			}
			return l, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			fw := watch.NewFakeWithChanSize(2, false)
			once.Do(func() {
				fw.Add(corrupt)
				fw.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonStoreReadError,
					Message: "failed to prepare current and previous objects: corrupt object has been deleted"})
			})
			return fw, nil
		},
	}
	inner := cache.NewStore(cache.MetaNamespaceKeyFunc)
	var hooks atomic.Int32
	store := &replaceHooks{Store: inner,
		before: func(rv string) {
			if rv == "5" {
				hooks.Add(1)
				if _, exists, _ := inner.Get(corrupt); !exists {
					t.Error("the corrupt object is not in the store before the relist's Replace")
				}
			}
		},
		after: func(rv string) {
			if rv == "5" {
				hooks.Add(1)
				if _, exists, _ := inner.Get(corrupt); exists {
					t.Error("the corrupt object is in the store after the relist's Replace")
				}
			}
		},
	}
	rig := runReflector(context.Background(), t, lw, store)
	require.Eventually(t, func() bool { return rig.rv() == "5" }, 30*time.Second, time.Millisecond)
	rig.stop()
	require.EqualValues(t, 2, hooks.Load())
	require.Len(t, inner.List(), len(all))
}

// A watch-list's objects reach a transforming store (a RealFIFO, a DeltaFIFO with a transformer)
// transformed, each object once: rewatch stages the initial events undecorated and hands them
// to the store's Replace, where client-go's reflector also transforms them in a temporary store
// first (docs/semantics.md, "Fewer transform calls": client-go transforms these 3 objects 5
// times).
func TestClientGoReflectorRespectStoreTransformer(t *testing.T) {
	type listingStore interface {
		driver.Store
		Pop(cache.PopProcessFunc) (any, error)
	}
	for name, build := range map[string]func(transform cache.TransformFunc) listingStore{
		"real-fifo": func(tf cache.TransformFunc) listingStore {
			return cache.NewRealFIFO(cache.MetaNamespaceKeyFunc, cache.NewStore(cache.MetaNamespaceKeyFunc), tf)
		},
		"delta-fifo": func(tf cache.TransformFunc) listingStore {
			return cache.NewDeltaFIFOWithOptions(cache.DeltaFIFOOptions{KeyFunction: cache.MetaNamespaceKeyFunc, Transformer: tf})
		},
	} {
		t.Run(name, func(t *testing.T) {
			mkPod := func(name, rv string) *corev1.Pod {
				return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv},
					Spec: corev1.PodSpec{Hostname: "test"}}
			}
			var transforms atomic.Int32
			store := build(func(obj any) (any, error) {
				transforms.Add(1)
				p := obj.(*corev1.Pod)
				p.Spec.Hostname = "transformed"
				return p, nil
			})
			var once sync.Once
			lw := &cache.ListWatch{
				ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
					return nil, errors.New("list call not expected in WatchList mode")
				},
				WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
					fw := watch.NewFakeWithChanSize(4, false)
					once.Do(func() {
						fw.Add(mkPod("foo-1", "1"))
						fw.Add(mkPod("foo-2", "2"))
						fw.Action(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "3",
							Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
						fw.Add(mkPod("foo-3", "3"))
					})
					return fw, nil
				},
			}
			rig := runReflector(context.Background(), t, lw, store, withPolicy(transitions.Config{WatchList: true}))
			seen := map[string]string{}
			for len(seen) < 3 {
				_, err := store.Pop(func(obj any, _ bool) error {
					for _, d := range obj.(cache.Deltas) {
						p := d.Object.(*corev1.Pod)
						seen[p.Name] = p.Spec.Hostname
					}
					return nil
				})
				require.NoError(t, err)
			}
			require.Eventually(t, func() bool { return rig.rv() == "3" }, 30*time.Second, time.Millisecond)
			rig.stop()
			require.Equal(t, map[string]string{"foo-1": "transformed", "foo-2": "transformed", "foo-3": "transformed"}, seen)
			require.EqualValues(t, 3, transforms.Load(), "each object transformed once")
		})
	}
}

// Server-side printing's Table (meta.k8s.io/v1 or v1beta1) is no object to cache: a watch event
// carrying one is dropped with an error, as is a LIST answering one; a Table of another group is
// an object like any other.
func TestClientGoIsUnsupportedTableObject(t *testing.T) {
	var reported atomic.Int32
	handlers := utilruntime.ErrorHandlers
	t.Cleanup(func() { utilruntime.ErrorHandlers = handlers })
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, _ error, msg string, _ ...any) {
		if strings.Contains(msg, "Unsupported watch event object gvk") {
			reported.Add(1)
		}
	}}
	table := func(apiVersion, name, rv string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "Table",
			"metadata": map[string]any{"name": name, "resourceVersion": rv}}}
	}
	t.Run("watch events", func(t *testing.T) {
		reported.Store(0)
		lw := &cache.ListWatch{
			ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
				l := &unstructured.UnstructuredList{}
				l.SetResourceVersion("1")
				return l, nil
			},
			WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
				return fakeWith(
					watch.Event{Type: watch.Added, Object: table("meta.k8s.io/v1beta1", "v1beta1", "2")},
					watch.Event{Type: watch.Added, Object: table("meta.k8s.io/v1", "v1", "3")},
					watch.Event{Type: watch.Added, Object: table("custom.group/v1", "custom", "4")}), nil
			},
		}
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		rig := runReflectorOf(context.Background(), t, &unstructured.Unstructured{}, lw, store)
		require.Eventually(t, func() bool { return rig.rv() == "4" }, 30*time.Second, time.Millisecond)
		rig.stop()
		require.Equal(t, []string{"custom"}, store.ListKeys())
		require.EqualValues(t, 2, reported.Load())
	})
	t.Run("a LIST", func(t *testing.T) {
		tr, err := listwatch.New(&cache.ListWatch{ListFunc: func(metav1.ListOptions) (kruntime.Object, error) {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("meta.k8s.io/v1")
			l.SetKind("Table")
			l.SetResourceVersion("1")
			return l, nil
		}}, "pods")
		require.NoError(t, err)
		var got []fsm.Event
		tr.List(context.Background(), fsm.Command{Kind: fsm.CmdListPage, Request: 1}, func(e fsm.Event) bool { got = append(got, e); return true })
		require.Len(t, got, 1)
		require.Equal(t, fsm.EvListFailed, got[0].Kind)
		require.Contains(t, got[0].Failure.Message, "unsupported list gvk")
	})
}

package informer_test

// client-go's controller behaviours — the informers of cache.NewInformer and its siblings, one
// handler each — checked on rewatch's constructors of the same names. Each test is named
// TestClientGo<Name> after the test of client-go v0.37's tools/cache/controller_test.go whose
// behaviour it checks (docs/semantics.md, "Handlers", "Relists"); the tests are this
// project's. client-go's TestProcessDeltasInBatch and TestStoreResourceVersionWithNonMetaTransform
// have no counterpart here: the first calls client-go's unexported processDeltasInBatch with a
// TransactionStore, the second builds cache.New with a queue and a key function of its own, and
// rewatch's informer has neither (it applies each change to client-go's indexer, keyed by
// namespace and name as client-go's informers key it). Run them with
// go test -race -run TestClientGo ./informer/.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/rewatch/rewatch/informer"
)

// controllerSource is client-go's fake controller source as client-go's controller tests use
// it, without a declaration that it lacks watch-list semantics (docs/semantics.md, "Streaming
// list": the first watch-list fails and the informer lists).
func controllerSource(t *testing.T) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	return src
}

// runController runs c until the test ends or the returned stop, which waits for Run.
func runController(t *testing.T, c cache.Controller) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.RunWithContext(ctx)
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

// keyOf is the cache key of a handler's object, DeletedFinalStateUnknown included.
func keyOf(t *testing.T, obj any) string {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	require.NoError(t, err)
	return key
}

// Three goroutines add, change and delete objects at random while the controller runs: no race
// (run with -race), no hang, and the controller's store ends as the source's state.
func TestClientGoHammerController(t *testing.T) {
	src := controllerSource(t)
	var mu sync.Mutex
	history := map[string][]string{}
	note := func(what string, obj any) {
		key := keyOf(t, obj)
		mu.Lock()
		history[key] = append(history[key], what)
		mu.Unlock()
	}
	store, controller := informer.NewInformer(src, &corev1.Pod{}, 100*time.Millisecond, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { note("add", obj) },
		UpdateFunc: func(_, obj any) { note("update", obj) },
		DeleteFunc: func(obj any) { note("delete", obj) },
	})
	require.False(t, controller.HasSynced(), "synced before Run")
	runController(t, controller)
	informer.SyncedWithin(t, controller.HasSynced)

	var writers sync.WaitGroup
	for w := range 3 {
		writers.Go(func() {
			var names []string
			for i := range 100 {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default",
					Labels: map[string]string{"n": strconv.Itoa(rand.IntN(1000))}}}
				if len(names) == 0 || rand.IntN(3) == 1 {
					pod.Name = fmt.Sprintf("w%d-%d", w, i)
					names = append(names, pod.Name)
					src.Add(pod)
					continue
				}
				j := rand.IntN(len(names))
				pod.Name = names[j]
				if rand.IntN(2) == 0 {
					src.Modify(pod)
				} else {
					names = slices.Delete(names, j, j+1)
					src.Delete(pod)
				}
			}
		})
	}
	writers.Wait()

	want, err := src.List(metav1.ListOptions{})
	require.NoError(t, err)
	items, err := meta.ExtractList(want)
	require.NoError(t, err)
	wantKeys := map[string]string{}
	for _, obj := range items {
		p := obj.(*corev1.Pod)
		wantKeys[p.Namespace+"/"+p.Name] = p.ResourceVersion
	}
	require.Eventually(t, func() bool {
		got := map[string]string{}
		for _, obj := range store.List() {
			p := obj.(*corev1.Pod)
			got[p.Namespace+"/"+p.Name] = p.ResourceVersion
		}
		return fmt.Sprint(got) == fmt.Sprint(wantKeys)
	}, 10*time.Second, 5*time.Millisecond, "the store never held the source's state")
	mu.Lock()
	defer mu.Unlock()
	for key, events := range history {
		require.NotEmpty(t, events, key)
	}
}

// listWatchOnly wraps a ListWatch that says it lacks watch-list semantics, which the informer
// honours (docs/semantics.md, "Streaming list"), as client-go's controller tests wrap theirs.
type listWatchOnly struct{ *cache.ListWatch }

func (listWatchOnly) IsWatchListSemanticsUnSupported() bool { return true }

// Objects added then updated concurrently are seen going from their first state to the last
// (a resync may repeat either), and a handler that deletes on the update it waits for sees every
// deletion.
func TestClientGoUpdate(t *testing.T) {
	src := controllerSource(t)
	const from, to = "from", "to"
	type transition struct{ from, to string }
	allowed := map[transition]bool{{from, to}: true, {to, to}: true, {from, from}: true}
	pod := func(name, check string, final bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"check": check}}}
		if final {
			p.Labels["final"] = "true"
		}
		return p
	}
	const threads = 3
	var deleted sync.WaitGroup
	deleted.Add(threads)
	watching := make(chan struct{})
	var watchOnce sync.Once
	lw := listWatchOnly{&cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) { return src.List(o) },
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			w, err := src.Watch(o)
			watchOnce.Do(func() { close(watching) })
			return w, err
		},
	}}
	var bad atomic.Value
	_, controller := informer.NewInformer(lw, &corev1.Pod{}, 0, cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			o, n := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			if tr := (transition{o.Labels["check"], n.Labels["check"]}); !allowed[tr] {
				bad.Store(fmt.Sprintf("%s: %q -> %q", n.Name, tr.from, tr.to))
			}
			if n.Labels["final"] == "true" {
				src.Delete(n)
			}
		},
		DeleteFunc: func(any) { deleted.Done() },
	})
	runController(t, controller)
	<-watching
	var writers sync.WaitGroup
	for i := range threads {
		writers.Go(func() {
			name := fmt.Sprintf("a-%d", i)
			src.Add(pod(name, from, false))
			src.Modify(pod(name, to, true))
		})
	}
	writers.Wait()
	waitGroupWithin(t, &deleted, 10*time.Second, "every deletion")
	require.Nil(t, bad.Load(), "a transition not allowed")
}

func waitGroupWithin(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not come within %s", what, d)
	}
}

// A handler's panic comes out of the controller's Run, to its caller, where it can be recovered
// (docs/semantics.md, "Handlers": the cache.NewInformer-style constructors).
func TestClientGoPanicPropagated(t *testing.T) {
	src := controllerSource(t)
	_, controller := informer.NewInformer(src, &corev1.Pod{}, 100*time.Millisecond, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(any, bool) { panic("Just panic.") },
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	propagated := make(chan any, 1)
	go func() {
		defer func() { propagated <- recover() }()
		controller.RunWithContext(ctx)
	}()
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test"}})
	select {
	case p := <-propagated:
		require.Equal(t, "Just panic.", p)
	case <-time.After(30 * time.Second):
		t.Fatal("the panic did not come out of Run")
	}
}

// The transform is applied to every object before it is stored and handed over: the initial
// list, adds, updates (the old object is the stored, transformed one) and deletes.
func TestClientGoTransformingInformer(t *testing.T) {
	src := controllerSource(t)
	makePod := func(name, generation string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "namespace", Labels: map[string]string{"generation": generation}},
			Spec:       corev1.PodSpec{Hostname: "hostname", Subdomain: "subdomain"},
		}
	}
	transformed := func(name, generation string) *corev1.Pod {
		p := makePod(name, generation)
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.NodeName = "new-hostname", "", "nodename"
		return p
	}
	src.Add(makePod("pod1", "1"))
	src.Modify(makePod("pod1", "2"))

	type event struct {
		kind      watch.EventType
		old, next any
	}
	events := make(chan event, 10)
	store, controller := informer.NewTransformingInformer(src, &corev1.Pod{}, 0, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, _ bool) { events <- event{watch.Added, nil, obj} },
		UpdateFunc: func(old, obj any) { events <- event{watch.Modified, old, obj} },
		DeleteFunc: func(obj any) { events <- event{watch.Deleted, obj, nil} },
	}, func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("unexpected object type: %T", obj)
		}
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.NodeName = "new-hostname", "", "nodename"
		p.ResourceVersion = "" // simpler comparisons
		return p, nil
	})
	expect := func(kind watch.EventType, old, next any) {
		t.Helper()
		select {
		case e := <-events:
			require.Equal(t, kind, e.kind)
			require.True(t, apiequality.Semantic.DeepEqual(old, e.old), "old object: want %#v, got %#v", old, e.old)
			require.True(t, apiequality.Semantic.DeepEqual(next, e.next), "object: want %#v, got %#v", next, e.next)
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s event", kind)
		}
	}
	stored := func(want ...*corev1.Pod) {
		t.Helper()
		items := store.List()
		require.Len(t, items, len(want))
		for _, w := range want {
			require.True(t, slices.ContainsFunc(items, func(item any) bool { return apiequality.Semantic.DeepEqual(item, w) }),
				"%s not in the store", w.Name)
		}
	}
	runController(t, controller)
	expect(watch.Added, nil, transformed("pod1", "2"))
	stored(transformed("pod1", "2"))
	src.Add(makePod("pod2", "1"))
	expect(watch.Added, nil, transformed("pod2", "1"))
	stored(transformed("pod1", "2"), transformed("pod2", "1"))
	src.Add(makePod("pod3", "1"))
	expect(watch.Added, nil, transformed("pod3", "1"))
	src.Modify(makePod("pod2", "2"))
	expect(watch.Modified, transformed("pod2", "1"), transformed("pod2", "2"))
	src.Delete(makePod("pod1", "2"))
	expect(watch.Deleted, transformed("pod1", "2"), nil)
	stored(transformed("pod2", "2"), transformed("pod3", "1"))
}

// An object is transformed once, whatever the resyncs, and readers of the store meanwhile see
// the transformed objects only (run with -race).
func TestClientGoTransformingInformerRace(t *testing.T) {
	src := controllerSource(t)
	const label, objects = "to-be-transformed", 5
	for i := range objects {
		src.Add(&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "namespace", Labels: map[string]string{label: "true"}},
			Spec:       corev1.PodSpec{Hostname: "hostname"},
		})
	}
	var twice atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan struct{}, objects)
	notify := func() {
		select {
		case events <- struct{}{}:
		case <-ctx.Done():
		}
	}
	// client-go's test asks for a 5 ms resync; rewatch, as client-go's shared informers,
	// resyncs a handler at most once a second (docs/semantics.md, "Handlers").
	store, controller := informer.NewTransformingInformer(src, &corev1.Pod{}, 5*time.Millisecond, cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(any, bool) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}, func(obj any) (any, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("unexpected object type: %T", obj)
		}
		if p.Labels[label] != "true" {
			twice.Store(true)
			return nil, fmt.Errorf("object already transformed: %#v", obj)
		}
		p.Labels[label] = "false"
		return p, nil
	})
	runCtx, stopRun := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); controller.RunWithContext(runCtx) }()
	for range objects {
		<-events
	}
	errs := make(chan error, objects)
	var readers sync.WaitGroup
	for i := range objects {
		readers.Go(func() {
			key := fmt.Sprintf("namespace/pod-%d", i)
			for runCtx.Err() == nil {
				obj, ok, err := store.GetByKey(key)
				if !ok || err != nil {
					errs <- fmt.Errorf("no object for %s (%v)", key, err)
					return
				}
				if l := obj.(*corev1.Pod).Labels[label]; l != "false" {
					errs <- fmt.Errorf("%s not transformed: %q", key, l)
					return
				}
			}
		})
	}
	time.Sleep(1500 * time.Millisecond) // a resync or more
	stopRun()
	readers.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.False(t, twice.Load(), "an object was transformed twice")
}

// relistingLW is a ListerWatcher whose List answers the state the test sets, and whose watch
// the test ends with a 410, so that the informer relists. It says it lacks watch-list semantics.
type relistingLW struct {
	mu    sync.Mutex
	rv    string
	items []corev1.Pod
	watch *watch.RaceFreeFakeWatcher
	lists atomic.Int32
}

func (l *relistingLW) set(rv string, items ...*corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rv, l.items = rv, nil
	for _, p := range items {
		l.items = append(l.items, *p.DeepCopy())
	}
}

func (l *relistingLW) List(metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lists.Add(1)
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: l.rv}}
	for i := range l.items {
		list.Items = append(list.Items, *l.items[i].DeepCopy())
	}
	return list, nil
}

func (l *relistingLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watch = watch.NewRaceFreeFake()
	return l.watch, nil
}

func (l *relistingLW) IsWatchListSemanticsUnSupported() bool { return true }

// expire ends the watch open now with a 410, once one is open.
func (l *relistingLW) expire(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.watch != nil
	}, 10*time.Second, time.Millisecond, "no watch opened")
	l.mu.Lock()
	w := l.watch
	l.watch = nil
	l.mu.Unlock()
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
}

func rvPod(name, rv string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: rv, Labels: labels}}
}

// eventRecord is one handler call: what it was, for which key, the resourceVersion of the
// object it was given (a DeletedFinalStateUnknown's object's), and the one the store held for
// the key at the time of the call ("" once deleted).
type eventRecord struct {
	Action, Key, EventRV, StoreRV string
	Initial                       bool
}

type eventRecorder struct {
	t     *testing.T
	store func() cache.Store
	mu    sync.Mutex
	got   []eventRecord
}

func (r *eventRecorder) OnAdd(obj any, initial bool) { r.note("add", obj, initial) }
func (r *eventRecorder) OnUpdate(_, obj any)         { r.note("update", obj, false) }
func (r *eventRecorder) OnDelete(obj any)            { r.note("delete", obj, false) }

func (r *eventRecorder) note(action string, obj any, initial bool) {
	key := keyOf(r.t, obj)
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	rec := eventRecord{Action: action, Key: key, Initial: initial}
	if m, err := meta.Accessor(obj); err == nil {
		rec.EventRV = m.GetResourceVersion()
	}
	if stored, ok, err := r.store().GetByKey(key); err == nil && ok {
		rec.StoreRV = stored.(*corev1.Pod).ResourceVersion
	}
	r.mu.Lock()
	r.got = append(r.got, rec)
	r.mu.Unlock()
}

// waitFor waits for n records and returns them, clearing them.
func (r *eventRecorder) waitFor(t *testing.T, n int) []eventRecord {
	t.Helper()
	var got []eventRecord
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		got = slices.Clone(r.got)
		return len(got) >= n
	}, 10*time.Second, time.Millisecond, "want %d handler calls", n)
	time.Sleep(100 * time.Millisecond) // and no more
	r.mu.Lock()
	defer r.mu.Unlock()
	got, r.got = r.got, nil
	return got
}

// A relist replaces the store with the new list, and tells the handler what changed: an update
// for each object whose resourceVersion changed, an add for each new one, and a delete
// (DeletedFinalStateUnknown, carrying the object last stored) for each one the list no longer
// holds — the deletes after the adds and updates, once the list has ended (docs/semantics.md,
// "Relists"; client-go's replace hands the deletes over first). Each call sees the store holding
// the state it reports.
func TestClientGoReplaceEvents(t *testing.T) {
	for _, tc := range []struct {
		name            string
		initial, relist []*corev1.Pod
		relistRV        string
		want            []eventRecord
	}{
		{
			name:     "Create with no initial objects",
			relist:   []*corev1.Pod{rvPod("pod-1", "1", nil)},
			relistRV: "1",
			want:     []eventRecord{{Action: "add", Key: "default/pod-1", EventRV: "1", StoreRV: "1"}},
		},
		{
			name:     "Delete all objects",
			initial:  []*corev1.Pod{rvPod("pod-1", "1", nil), rvPod("pod-3", "2", nil)},
			relistRV: "2",
			want: []eventRecord{
				{Action: "delete", Key: "default/pod-1", EventRV: "1"},
				{Action: "delete", Key: "default/pod-3", EventRV: "2"},
			},
		},
		{
			name: "Create, update, delete",
			initial: []*corev1.Pod{rvPod("pod-1", "1", nil), rvPod("pod-2", "2", map[string]string{"ver": "1"}),
				rvPod("pod-3", "3", nil)},
			relist: []*corev1.Pod{rvPod("pod-1", "4", nil), rvPod("pod-2", "5", map[string]string{"ver": "2"}),
				rvPod("pod-4", "6", nil)},
			relistRV: "6",
			want: []eventRecord{
				{Action: "update", Key: "default/pod-1", EventRV: "4", StoreRV: "4"},
				{Action: "update", Key: "default/pod-2", EventRV: "5", StoreRV: "5"},
				{Action: "add", Key: "default/pod-4", EventRV: "6", StoreRV: "6"},
				{Action: "delete", Key: "default/pod-3", EventRV: "3"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := &relistingLW{}
			lw.set("1", tc.initial...)
			var store cache.Indexer
			rec := &eventRecorder{t: t, store: func() cache.Store { return store }}
			var controller cache.Controller
			store, controller = informer.NewIndexerInformer(lw, &corev1.Pod{}, 0, rec, cache.Indexers{})
			runController(t, controller)
			informer.SyncedWithin(t, controller.HasSynced)
			initial := rec.waitFor(t, len(tc.initial))
			require.Len(t, initial, len(tc.initial))
			for _, r := range initial {
				require.Equal(t, "add", r.Action)
				require.True(t, r.Initial)
			}

			lw.set(tc.relistRV, tc.relist...)
			lw.expire(t)
			got := rec.waitFor(t, len(tc.want))
			// A relist's deletes are handed over in no particular order among themselves.
			sort.SliceStable(got, func(i, j int) bool {
				return got[i].Action == "delete" && got[j].Action == "delete" && got[i].Key < got[j].Key
			})
			require.Equal(t, tc.want, got)
			var keys []string
			for _, obj := range store.List() {
				p := obj.(*corev1.Pod)
				keys = append(keys, p.Name+"@"+p.ResourceVersion)
			}
			var want []string
			for _, p := range tc.relist {
				want = append(want, p.Name+"@"+p.ResourceVersion)
			}
			require.ElementsMatch(t, want, keys)
		})
	}
}

// A watch that ends while changes are made that it does not deliver: the informer resumes from
// the last resourceVersion and the handler is given the changes as an update and an add, not as
// part of an initial list.
func TestClientGoResetWatch(t *testing.T) {
	src := controllerSource(t)
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
	var store cache.Store
	rec := &eventRecorder{t: t, store: func() cache.Store { return store }}
	var controller cache.Controller
	store, controller = informer.NewInformer(src, &corev1.Pod{}, 0, rec)
	runController(t, controller)
	informer.SyncedWithin(t, controller.HasSynced)
	got := rec.waitFor(t, 1)
	require.Equal(t, []eventRecord{{Action: "add", Key: "default/pod-1", EventRV: "1", StoreRV: "1", Initial: true}}, got)

	src.ModifyDropWatch(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
	src.AddDropWatch(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-2", Namespace: "default"}})
	src.ResetWatch()
	got = rec.waitFor(t, 2)
	require.ElementsMatch(t, []eventRecord{
		{Action: "update", Key: "default/pod-1", EventRV: "2", StoreRV: "2"},
		{Action: "add", Key: "default/pod-2", EventRV: "3", StoreRV: "3"},
	}, got)
}

// The store's resourceVersion (client-go's LastStoreSyncResourceVersion) follows every watch
// event: an update's, a delete's (docs/semantics.md, "Visibility").
func TestClientGoStoreResourceVersion(t *testing.T) {
	src := controllerSource(t)
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
	var store cache.Indexer
	rec := &eventRecorder{t: t, store: func() cache.Store { return store }}
	var controller cache.Controller
	store, controller = informer.NewIndexerInformer(src, &corev1.Pod{}, 0, rec, cache.Indexers{})
	runController(t, controller)
	informer.SyncedWithin(t, controller.HasSynced)
	require.Equal(t, "add", rec.waitFor(t, 1)[0].Action)

	src.Modify(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default", Labels: map[string]string{"foo": "bar"}}})
	update := rec.waitFor(t, 1)[0]
	require.Equal(t, "update", update.Action)
	require.Equal(t, update.EventRV, store.LastStoreSyncResourceVersion())

	src.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-1", Namespace: "default"}})
	del := rec.waitFor(t, 1)[0]
	require.Equal(t, "delete", del.Action)
	require.Equal(t, del.EventRV, store.LastStoreSyncResourceVersion())
}

// deletions runs an informer over a relistingLW holding a ConfigMap, with a typed handler
// (cache.NewTypedSharedIndexInformer) and an untyped one, then drops the ConfigMap from the
// list and relists: both handlers are told of the deletion the relist found, the untyped one
// with a DeletedFinalStateUnknown.
func deletions(t *testing.T) (untyped cache.DeletedFinalStateUnknown, typed cache.DeletedObject[*corev1.ConfigMap], cm *corev1.ConfigMap) {
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "testname", Namespace: "testnamespace", ResourceVersion: "1"}}
	lw := &relistingCMs{}
	lw.set("1", cm)
	inf := cache.NewTypedSharedIndexInformer[*corev1.ConfigMap](informer.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{}))
	gotUntyped := make(chan any, 1)
	gotTyped := make(chan cache.DeletedObject[*corev1.ConfigMap], 1)
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) { gotUntyped <- obj }})
	require.NoError(t, err)
	_, err = inf.AddTypedEventHandler(cache.TypedResourceEventHandlerFuncs[*corev1.ConfigMap]{
		DeleteFunc: func(obj cache.DeletedObject[*corev1.ConfigMap]) { gotTyped <- obj },
	})
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	lw.set("2")
	lw.expire(t)
	select {
	case obj := <-gotUntyped:
		d, ok := obj.(cache.DeletedFinalStateUnknown)
		require.True(t, ok, "a deletion a relist found is a DeletedFinalStateUnknown, not a %T", obj)
		untyped = d
	case <-time.After(10 * time.Second):
		t.Fatal("no deletion")
	}
	select {
	case typed = <-gotTyped:
	case <-time.After(10 * time.Second):
		t.Fatal("no typed deletion")
	}
	return untyped, typed, cm
}

// relistingCMs is relistingLW for ConfigMaps.
type relistingCMs struct {
	relistingLW
	cms []corev1.ConfigMap
}

func (l *relistingCMs) set(rv string, items ...*corev1.ConfigMap) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rv, l.cms = rv, nil
	for _, c := range items {
		l.cms = append(l.cms, *c.DeepCopy())
	}
}

func (l *relistingCMs) List(metav1.ListOptions) (runtime.Object, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: l.rv}}
	for i := range l.cms {
		list.Items = append(list.Items, *l.cms[i].DeepCopy())
	}
	return list, nil
}

// The DeletedFinalStateUnknown of a deletion a relist found names the object, as
// cache.DeletionHandlingObjectToName reads it.
func TestClientGoDeletionHandlingObjectToName(t *testing.T) {
	d, _, cm := deletions(t)
	want, err := cache.ObjectToName(cm)
	require.NoError(t, err)
	got, err := cache.DeletionHandlingObjectToName(d)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, "testnamespace/testname", d.Key)
	require.True(t, apiequality.Semantic.DeepEqual(cm, d.Obj), "the object last stored: %#v", d.Obj)
}

// A typed handler is given the deletion a relist found as a DeletedObject whose object name is
// the object's, from the DeletedFinalStateUnknown it carries.
func TestClientGoDeletedObjectGetObjectName(t *testing.T) {
	_, typed, cm := deletions(t)
	want, err := cache.ObjectToName(cm)
	require.NoError(t, err)
	require.Equal(t, want, typed.GetObjectName())
	require.NotNil(t, typed.FinalStateUnknown)
	require.Equal(t, "testname", typed.OptionalObj.Name)
}

// A typed handler is given the deletion a relist found as a DeletedObject whose key is the
// object's cache key.
func TestClientGoDeletedObjectGetKey(t *testing.T) {
	_, typed, cm := deletions(t)
	want, err := cache.MetaNamespaceKeyFunc(cm)
	require.NoError(t, err)
	require.Equal(t, want, typed.GetKey())
}

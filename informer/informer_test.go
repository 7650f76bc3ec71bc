package informer_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/transitions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTransport answers LISTs from a queue of pages and watches from a queue of scripts; with
// a queue empty, the request hangs until it is aborted.
type fakeTransport struct {
	mu      sync.Mutex
	lists   []page
	watches [][]step
}

// page is one LIST answer: its items, then its end at rv, or (fail set) a failure after the
// items. A nil item with gate set waits for the gate to open.
type page struct {
	rv    string
	cont  string // the continue token: the collection holds more
	items []any
	fail  *fsm.Failure
	gate  chan struct{}
}

// step is one watch event, or (gate set) a wait for the test to open the gate.
type step struct {
	event fsm.Event
	gate  chan struct{}
}

func (f *fakeTransport) String() string { return "configmaps (fake)" }

// pending is how many LIST answers are still queued.
func (f *fakeTransport) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lists)
}

// List emits the page's items one by one, as a streaming transport does, then the page's end.
func (f *fakeTransport) List(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	f.mu.Lock()
	if len(f.lists) == 0 {
		f.mu.Unlock()
		<-ctx.Done()
		return
	}
	p := f.lists[0]
	f.lists = f.lists[1:]
	f.mu.Unlock()
	for _, item := range p.items {
		if p.gate != nil && item == nil {
			select {
			case <-p.gate:
				continue
			case <-ctx.Done():
				return
			}
		}
		o := item.(*corev1.ConfigMap)
		if !emit(fsm.Event{Kind: fsm.EvListItem, Request: c.Request, Key: o.Namespace + "/" + o.Name, ResourceVersion: o.ResourceVersion, Object: o}) {
			return
		}
	}
	if p.fail != nil {
		emit(fsm.Event{Kind: fsm.EvListFailed, Request: c.Request, Failure: p.fail})
		return
	}
	emit(fsm.Event{Kind: fsm.EvListPage, Request: c.Request, ResourceVersion: p.rv, Continue: p.cont, ItemCount: len(p.items)})
}

func (f *fakeTransport) Watch(ctx context.Context, c fsm.Command, emit func(fsm.Event) bool) {
	f.mu.Lock()
	var script []step
	if len(f.watches) > 0 {
		script, f.watches = f.watches[0], f.watches[1:]
	}
	f.mu.Unlock()
	if !emit(fsm.Event{Kind: fsm.EvWatchOpened, Request: c.Request}) {
		return
	}
	for _, s := range script {
		if s.gate != nil {
			select {
			case <-s.gate:
				continue
			case <-ctx.Done():
				return
			}
		}
		e := s.event
		e.Request = c.Request
		if !emit(e) || e.Kind != fsm.EvWatchEvent {
			return
		}
	}
	<-ctx.Done()
}

func cm(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}}
}

func added(obj *corev1.ConfigMap) step {
	return step{event: fsm.Event{Kind: fsm.EvWatchEvent, Type: fsm.Added, Object: obj, Key: "ns/" + obj.Name, ResourceVersion: obj.ResourceVersion}}
}

func watchError(st *metav1.Status) step {
	return step{event: fsm.Event{Kind: fsm.EvWatchError, Failure: &fsm.Failure{Status: st, Message: st.Message}}}
}

func expired() step {
	return watchError(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old"})
}

// recorder is a handler that writes down what it is told, one line per call.
type recorder struct {
	mu    sync.Mutex
	lines []string
	block chan struct{} // when set, every call waits for it first
}

func (r *recorder) log(format string, args ...any) {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func name(obj any) string {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.Name + "@" + o.ResourceVersion
	case cache.DeletedFinalStateUnknown:
		return "unknown(" + o.Key + ")"
	}
	return fmt.Sprintf("%T", obj)
}

func (r *recorder) OnAdd(obj any, initial bool) { r.log("add %s initial=%v", name(obj), initial) }
func (r *recorder) OnUpdate(old, obj any)       { r.log("update %s -> %s", name(old), name(obj)) }
func (r *recorder) OnDelete(obj any)            { r.log("delete %s", name(obj)) }

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines)
}

func (r *recorder) waitFor(t *testing.T, n int) []string {
	t.Helper()
	require.Eventually(t, func() bool { return len(r.seen()) >= n }, 10*time.Second, time.Millisecond, "saw %v", r.seen())
	return r.seen()
}

func run(t *testing.T, inf cache.SharedIndexInformer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("informer did not stop")
		}
	}
	t.Cleanup(stop)
	return stop
}

var quiet = informer.Options{Logger: slog.New(slog.DiscardHandler)}

// The initial list arrives as adds with isInInitialList; a watch event as an add; a relist after
// a 410 is diffed against the indexer: an update for a key whose object changed, none for one
// whose resourceVersion did not (docs/semantics.md, "Relists"), an add for a new key, a delete
// of DeletedFinalStateUnknown for a key that vanished while the watch was down.
func TestRelistIsDiffedAgainstTheIndexer(t *testing.T) {
	ft := &fakeTransport{
		lists:   []page{{rv: "10", items: []any{cm("a", "1"), cm("b", "2")}}, {rv: "20", items: []any{cm("a", "1"), cm("c", "15"), cm("d", "18")}}},
		watches: [][]step{{added(cm("c", "11")), expired()}},
	}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	var r recorder
	reg, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	stop := run(t, inf)
	informer.SyncedWithin(t, reg.HasSynced)
	got := r.waitFor(t, 6)
	require.Equal(t, []string{
		"add a@1 initial=true", "add b@2 initial=true",
		"add c@11 initial=false",
		"update c@11 -> c@15", "add d@18 initial=false", "delete unknown(ns/b)",
	}, got)
	require.ElementsMatch(t, []string{"ns/a", "ns/c", "ns/d"}, inf.GetIndexer().ListKeys())
	require.Equal(t, "20", inf.LastSyncResourceVersion())
	stop()
	require.True(t, inf.IsStopped())
}

// A handler that does not return holds up only itself: the other handler and the indexer see
// every event.
func TestSlowHandlerDoesNotStallTheWatch(t *testing.T) {
	var events []step
	for i := range 2000 {
		events = append(events, added(cm(fmt.Sprintf("o%d", i), fmt.Sprint(11+i))))
	}
	ft := &fakeTransport{lists: []page{{rv: "10", items: nil}}, watches: [][]step{events}}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	slow := &recorder{block: make(chan struct{})}
	var fast recorder
	_, err := inf.AddEventHandler(slow)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(&fast)
	require.NoError(t, err)
	run(t, inf)
	fast.waitFor(t, 2000)
	require.Len(t, inf.GetIndexer().ListKeys(), 2000)
	require.Empty(t, slow.seen())
	close(slow.block)
	require.Len(t, slow.waitFor(t, 2000), 2000)
}

// A handler added after the sync is first given the current contents as adds with
// isInInitialList true; its registration syncs once it has had them. A removed handler hears
// nothing more.
func TestLateHandlerGetsTheContentsAndRemovalStopsDelivery(t *testing.T) {
	gate := make(chan struct{})
	ft := &fakeTransport{
		lists:   []page{{rv: "10", items: []any{cm("a", "1"), cm("b", "2")}}},
		watches: [][]step{{{gate: gate}, added(cm("c", "11"))}},
	}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	var early recorder
	earlyReg, err := inf.AddEventHandler(&early)
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	var late recorder
	lateReg, err := inf.AddEventHandler(&late)
	require.NoError(t, err)
	informer.SyncedWithin(t, lateReg.HasSynced)
	require.ElementsMatch(t, []string{"add a@1 initial=true", "add b@2 initial=true"}, late.waitFor(t, 2))
	select {
	case <-lateReg.HasSyncedChecker().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the late registration's checker never closed")
	}
	require.NoError(t, inf.RemoveEventHandler(earlyReg))
	close(gate)
	require.Equal(t, "add c@11 initial=false", late.waitFor(t, 3)[2])
	require.Len(t, early.seen(), 2, "a removed handler was called")
	require.NoError(t, inf.RemoveEventHandler(earlyReg), "removing twice is no error, as in client-go")
	// Another informer's registration is the subject of TestConformanceRemoveForeignRegistration.
}

// Resync sends an update with old == new for every cached object at the handler's period;
// a handler without one gets none.
func TestResyncAtTheHandlersPeriod(t *testing.T) {
	ft := &fakeTransport{lists: []page{{rv: "10", items: []any{cm("a", "1"), cm("b", "2")}}}}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	var resynced, never recorder
	_, err := inf.AddEventHandlerWithResyncPeriod(&resynced, time.Second)
	require.NoError(t, err)
	_, err = inf.AddEventHandler(&never)
	require.NoError(t, err)
	run(t, inf)
	got := resynced.waitFor(t, 6)
	require.ElementsMatch(t, []string{"update a@1 -> a@1", "update b@2 -> b@2"}, got[2:4])
	require.Len(t, never.seen(), 2)
}

// The managedFields transform and the watch error handler: the cache holds objects without
// managedFields; a 429 reaches the handler as an *apierrors.StatusError, and the reflector
// re-watches without a LIST. Neither can be set once the informer runs.
func TestTransformAndWatchErrorHandler(t *testing.T) {
	withFields := cm("a", "1")
	withFields.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	tooMany := &metav1.Status{Status: metav1.StatusFailure, Code: 429, Reason: metav1.StatusReasonTooManyRequests, Message: "slow down",
		Details: &metav1.StatusDetails{RetryAfterSeconds: 1}}
	ft := &fakeTransport{lists: []page{{rv: "10", items: []any{withFields}}}, watches: [][]step{{watchError(tooMany)}}}
	opts := quiet
	opts.Policy = transitions.Config{Backoff: backoff.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1}}
	inf := informer.New(ft, &corev1.ConfigMap{}, opts)
	require.NoError(t, inf.SetTransform(informer.StripManagedFields))
	errs := make(chan error, 4)
	require.NoError(t, inf.SetWatchErrorHandlerWithContext(func(_ context.Context, r *cache.Reflector, err error) {
		require.NotNil(t, r)
		errs <- err
	}))
	run(t, inf)
	select {
	case err := <-errs:
		require.True(t, apierrors.IsTooManyRequests(err), "%v", err)
		secs, ok := apierrors.SuggestsClientDelay(err)
		require.True(t, ok)
		require.Equal(t, 1, secs)
	case <-time.After(10 * time.Second):
		t.Fatal("the watch error handler was not called")
	}
	obj, ok, err := inf.GetIndexer().GetByKey("ns/a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, obj.(*corev1.ConfigMap).ManagedFields)
	require.Error(t, inf.SetTransform(nil))
	require.Error(t, inf.SetWatchErrorHandler(func(*cache.Reflector, error) {}))
	ft.mu.Lock()
	defer ft.mu.Unlock()
	require.Empty(t, ft.watches, "the reflector re-watched after the 429")
}

func TestIndexersAndListers(t *testing.T) {
	ft := &fakeTransport{lists: []page{{rv: "10", items: []any{cm("a", "1"), cm("b", "2")}}}}
	opts := quiet
	opts.Indexers = cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	inf := informer.New(ft, &corev1.ConfigMap{}, opts)
	require.NoError(t, inf.AddIndexers(cache.Indexers{"byName": func(obj any) ([]string, error) { return []string{obj.(*corev1.ConfigMap).Name}, nil }}))
	run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	byNS, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ns")
	require.NoError(t, err)
	require.Len(t, byNS, 2)
	byName, err := inf.GetIndexer().ByIndex("byName", "b")
	require.NoError(t, err)
	require.Len(t, byName, 1)
	require.True(t, inf.GetController().HasSynced())
}

// docs/semantics.md "Relists": a relist goes into the indexer item by item. Mid-relist a lister
// sees each object old or new — a changed one already new, a vanished one still there — and
// handlers have had the updates and adds of the items so far; the delete of what vanished
// comes when the state is complete.
func TestRelistIsAppliedAsItArrives(t *testing.T) {
	gate := make(chan struct{})
	ft := &fakeTransport{
		lists: []page{
			{rv: "10", items: []any{cm("a", "1"), cm("b", "2"), cm("c", "3")}},
			{rv: "20", items: []any{cm("a", "1"), cm("c", "15"), nil, cm("d", "18")}, gate: gate},
		},
		watches: [][]step{{expired()}},
	}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	var r recorder
	reg, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	run(t, inf)
	informer.SyncedWithin(t, reg.HasSynced)
	got := r.waitFor(t, 4)
	require.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=true", "update c@3 -> c@15"}, got)
	lister := inf.GetIndexer()
	versions := func() map[string]string {
		out := map[string]string{}
		for _, o := range lister.List() {
			out[o.(*corev1.ConfigMap).Name] = o.(*corev1.ConfigMap).ResourceVersion
		}
		return out
	}
	require.Equal(t, map[string]string{"a": "1", "b": "2", "c": "15"}, versions(), "mid-relist: c new, b not yet deleted")
	close(gate)
	got = r.waitFor(t, 6)
	require.Equal(t, []string{"add d@18 initial=false", "delete unknown(ns/b)"}, got[4:])
	require.Equal(t, map[string]string{"a": "1", "c": "15", "d": "18"}, versions())
}

// An initial list that breaks off leaves the informer unsynced, with the objects it brought in
// the indexer and given to handlers as initial adds; the retry completes it without giving
// them again, and only then does HasSynced turn true.
func TestInitialListCutMidwayIsCompletedByTheRetry(t *testing.T) {
	gate := make(chan struct{})
	clock := clockx.NewMock(time.Unix(0, 0))
	ft := &fakeTransport{lists: []page{
		{items: []any{cm("a", "1"), cm("b", "2")}, fail: &fsm.Failure{Transport: fsm.EOF, Message: "unexpected EOF"}},
		{rv: "10", items: []any{cm("a", "1"), nil, cm("b", "3"), cm("c", "4")}, gate: gate},
	}}
	opts := quiet
	opts.Clock = clock
	inf := informer.New(ft, &corev1.ConfigMap{}, opts)
	var r recorder
	_, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	run(t, inf)
	require.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true"}, r.waitFor(t, 2))
	require.NoError(t, clock.WaitForTimers(t.Context(), 1))
	require.False(t, inf.HasSynced(), "a cut initial list is not a sync")
	clock.Add(time.Minute)
	require.Eventually(t, func() bool { return ft.pending() == 0 }, 10*time.Second, time.Millisecond)
	require.False(t, inf.HasSynced(), "the retry has not finished")
	close(gate)
	require.Eventually(t, inf.HasSynced, 10*time.Second, time.Millisecond)
	require.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "update b@2 -> b@3", "add c@4 initial=true"}, r.waitFor(t, 4))
}

// skippingTransport is a fakeTransport that, given the store's query (a relist), hands over
// the items the store holds at their resourceVersion without their object, as the HTTP
// transport does; kept counts them.
type skippingTransport struct {
	*fakeTransport
	kept atomic.Int32
}

func (s *skippingTransport) ListHeld(ctx context.Context, c fsm.Command, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	s.fakeTransport.List(ctx, c, func(e fsm.Event) bool {
		if o, ok := e.Object.(*corev1.ConfigMap); ok && e.Kind == fsm.EvListItem {
			if rv, uid, ok := held(o.Namespace, o.Name); ok && rv == o.ResourceVersion && uid == string(o.UID) {
				e.Object = nil
				s.kept.Add(1)
			}
		}
		return emit(e)
	})
}

func (s *skippingTransport) WatchHeld(ctx context.Context, c fsm.Command, _ func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	s.fakeTransport.Watch(ctx, c, emit)
}

var _ driver.SkippingTransport = (*skippingTransport)(nil)

// docs/semantics.md "Relists": an item the transport left undecoded because the indexer holds
// it at the same resourceVersion stays in the indexer — the very object — and no handler hears
// of it; a changed item is an update, a vanished one a delete at the end. The initial list is
// decoded whole: the informer offers its query only once it has synced.
func TestRelistKeepsWhatTheTransportLeftUndecoded(t *testing.T) {
	a := cm("a", "1")
	ft := &skippingTransport{fakeTransport: &fakeTransport{
		lists:   []page{{rv: "10", items: []any{a, cm("b", "2"), cm("c", "3")}}, {rv: "20", items: []any{cm("a", "1"), cm("b", "5")}}},
		watches: [][]step{{expired()}},
	}}
	inf := informer.New(ft, &corev1.ConfigMap{}, quiet)
	var r recorder
	_, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	run(t, inf)
	got := r.waitFor(t, 5)
	require.Equal(t, []string{
		"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=true",
		"update b@2 -> b@5", "delete unknown(ns/c)",
	}, got)
	require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == "20" }, 10*time.Second, time.Millisecond)
	require.EqualValues(t, 1, ft.kept.Load())
	require.ElementsMatch(t, []string{"ns/a", "ns/b"}, inf.GetIndexer().ListKeys())
	got2, ok, err := inf.GetIndexer().GetByKey("ns/a")
	require.NoError(t, err)
	require.True(t, ok)
	require.Same(t, a, got2)
	time.Sleep(50 * time.Millisecond) // nothing more comes
	require.Len(t, r.seen(), 5)
}

func deletedInitial(obj *corev1.ConfigMap) step {
	return step{event: fsm.Event{Kind: fsm.EvWatchEvent, Type: fsm.Deleted, Object: obj, Key: "ns/" + obj.Name, ResourceVersion: obj.ResourceVersion}}
}

func initialEventsEnd(rv string) step {
	return step{event: fsm.Event{Kind: fsm.EvWatchEvent, Type: fsm.Bookmark, InitialEventsEnd: true, ResourceVersion: rv}}
}

// docs/semantics.md "Streaming list": a DELETED among a watch-list's initial events says the
// object is not part of the new state, whether this state put it already or the indexer held it
// from before; the state's end deletes it, with the DeletedFinalStateUnknown every object the
// state lacks gets. A DELETED for a key the informer never held is no error and tells no one.
func TestADeletedInitialEventTakesTheObjectOutOfTheRelist(t *testing.T) {
	ft := &fakeTransport{watches: [][]step{
		{added(cm("a", "1")), added(cm("b", "2")), added(cm("c", "3")), added(cm("d", "4")), initialEventsEnd("10"), expired()},
		// The relist: c arrives unchanged and is then deleted; d, held from the first state, is
		// deleted without arriving; e was never held; b changed.
		{added(cm("a", "1")), added(cm("b", "5")), added(cm("c", "3")), deletedInitial(cm("c", "6")),
			deletedInitial(cm("d", "7")), deletedInitial(cm("e", "8")), initialEventsEnd("20")},
	}}
	opts := quiet
	opts.Policy.WatchList = true
	inf := informer.New(ft, &corev1.ConfigMap{}, opts)
	var r recorder
	_, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	run(t, inf)
	got := r.waitFor(t, 7)
	require.Equal(t, []string{
		"add a@1 initial=true", "add b@2 initial=true", "add c@3 initial=true", "add d@4 initial=true",
		"update b@2 -> b@5",
	}, got[:5])
	// The state's end deletes what it lacks in the indexer's key order, which is a map's.
	require.ElementsMatch(t, []string{"delete unknown(ns/c)", "delete unknown(ns/d)"}, got[5:])
	require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == "20" }, 10*time.Second, time.Millisecond)
	require.ElementsMatch(t, []string{"ns/a", "ns/b"}, inf.GetIndexer().ListKeys())
	require.Len(t, r.seen(), 7, "nothing is told of e, which the informer never held")
}

package informer

// client-go's SharedInformer behaviours, checked on rewatch's informer. Each test is named
// TestClientGo<Name> after the test of client-go v0.37's tools/cache/shared_informer_test.go
// whose behaviour it checks, and checks that behaviour — as documented in client-go and in
// docs/semantics.md, "Handlers" — through rewatch's constructors over client-go's fake
// controller source as client-go's tests use it: without a declaration that it lacks
// watch-list semantics, so each informer's first watch-list meets the fake's Watch failing
// (strconv.Atoi on the empty resourceVersion) and falls back to a LIST, as client-go's
// reflector does (docs/semantics.md, "Streaming list"). The tests are this project's; where
// one reads the informer's insides (how many handlers are registered, whether it started), it
// reads rewatch's. Run them with go test -race -run TestClientGo ./informer/.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/internal/syncbuf"
)

// fakeSource is client-go's fake controller source, shut down when the test ends (after the
// informers on it have stopped: cleanups run last first).
func fakeSource(t testing.TB) *fcache.FakeControllerSource {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	return src
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// settle is how long a test watches for notifications it must not get, once the ones it must
// get have come.
const settle = 200 * time.Millisecond

// received is a handler that notes the names of the objects it is given as adds and updates.
// A test that holds hold keeps it from noting anything (its calls wait).
type received struct {
	hold  sync.Mutex
	mu    sync.Mutex
	names []string
}

func (r *received) OnAdd(obj any, _ bool) { r.note(obj) }
func (r *received) OnUpdate(_, obj any)   { r.note(obj) }
func (r *received) OnDelete(any)          {}

func (r *received) note(obj any) {
	r.hold.Lock()
	r.hold.Unlock() //nolint:staticcheck // an empty section: the call waits while a test holds it
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.names = append(r.names, m.GetName())
	r.mu.Unlock()
}

func (r *received) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.names)
}

func (r *received) reset() {
	r.mu.Lock()
	r.names = nil
	r.mu.Unlock()
}

// is says whether the names noted so far are exactly want, as a set.
func (r *received) is(want ...string) bool { return sets.New(r.got()...).Equal(sets.New(want...)) }

// settlesOn waits until the names noted are exactly want, as a set, and checks that they still
// are after settle: nothing more came.
func (r *received) settlesOn(t *testing.T, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return r.is(want...) }, 10*time.Second, 5*time.Millisecond,
		"want %v, got %v", want, r.got())
	time.Sleep(settle)
	require.True(t, r.is(want...), "want %v, got %v after a pause", want, r.got())
}

// runInformer runs inf as client-go's tests run an informer (Run with a stop channel) until
// the returned function, which waits for Run to return, or the test's end.
func runInformer(t *testing.T, inf cache.SharedInformer) (stop func()) {
	stopCh := make(chan struct{})
	var wg wait.Group
	wg.StartWithChannel(stopCh, inf.Run)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopCh)
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

func rewatchInformer(t *testing.T, inf cache.SharedInformer) *Informer {
	t.Helper()
	i, ok := inf.(*Informer)
	require.True(t, ok, "%T is not rewatch's informer", inf)
	return i
}

// handlerCount is how many handlers are registered with inf.
func handlerCount(inf *Informer) int {
	inf.processor.mu.Lock()
	defer inf.processor.mu.Unlock()
	return len(inf.processor.listeners)
}

// registered says whether reg is one of inf's registered handlers.
func registered(inf *Informer, reg cache.ResourceEventHandlerRegistration) bool {
	r, ok := reg.(*registration)
	if !ok {
		return false
	}
	inf.processor.mu.Lock()
	defer inf.processor.mu.Unlock()
	_, in := inf.processor.listeners[r.l]
	return in
}

// Indexers given before the informer runs index the initial list and later changes; indexers
// added while it runs index what the cache holds at once.
func TestClientGoIndexer(t *testing.T) {
	src := fakeSource(t)
	labelled := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	byLabelKey := func(obj any) ([]string, error) {
		var keys []string
		for k := range obj.(*corev1.Pod).Labels {
			keys = append(keys, k)
		}
		return keys, nil
	}
	src.Add(labelled("pod1", map[string]string{"a": "a-val", "b": "b-val1"}))
	src.Add(labelled("pod2", map[string]string{"b": "b-val2"}))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	require.NoError(t, inf.AddIndexers(cache.Indexers{"labels": byLabelKey}))
	runInformer(t, inf)
	SyncedWithin(t, inf.HasSynced)

	names := func(index, value string) []string {
		objs, err := inf.GetIndexer().ByIndex(index, value)
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, o.(*corev1.Pod).Name)
		}
		slices.Sort(out)
		return out
	}
	require.Equal(t, []string{"pod1"}, names("labels", "a"))
	src.Add(labelled("pod3", map[string]string{"a": "a-val2"}))
	require.Eventually(t, func() bool { return slices.Equal(names("labels", "a"), []string{"pod1", "pod3"}) }, 10*time.Second, time.Millisecond)

	require.NoError(t, inf.AddIndexers(cache.Indexers{"labels-again": byLabelKey}), "an indexer added while the informer runs")
	require.Equal(t, []string{"pod1", "pod3"}, names("labels-again", "a"), "an added indexer indexes the cache at once")
	for _, index := range []string{"labels", "labels-again"} {
		require.ElementsMatch(t, []string{"a", "b"}, inf.GetIndexer().ListIndexFuncValues(index), index)
	}
}

func TestClientGoListenerResyncPeriods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { listenerResyncPeriods(t, 0) })
}

// The same when the processor starts handing out only after the initial list was queued
// (client-go's informer once deadlocked so).
func TestClientGoListenerResyncPeriodsDelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { listenerResyncPeriods(t, time.Second) })
}

// Each handler is resynced at its own period, and only then: one without a period never is.
// In a synctest bubble, so the periods pass on its fake time.
func listenerResyncPeriods(t *testing.T, processorDelay time.Duration) {
	if processorDelay > 0 {
		delay := func() { time.Sleep(processorDelay) }
		processorRunHook.Store(&delay)
		defer processorRunHook.Store(nil)
	}
	src := fakeSource(t)
	src.Add(pod("pod1"))
	src.Add(pod("pod2"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	var never, every2s, every3s received
	for h, period := range map[*received]time.Duration{&never: 0, &every2s: 2 * time.Second, &every3s: 3 * time.Second} {
		_, err := inf.AddEventHandlerWithResyncPeriod(h, period)
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var wg wait.Group
	wg.StartWithChannel(stop, inf.Run)
	defer func() {
		close(stop)
		wg.Wait()
	}()

	time.Sleep(processorDelay)
	synctest.Wait()
	for name, h := range map[string]*received{"never": &never, "every 2s": &every2s, "every 3s": &every3s} {
		require.True(t, h.is("pod1", "pod2"), "%s: the initial list: %v", name, h.got())
		h.reset()
	}

	time.Sleep(2*time.Second - processorDelay)
	synctest.Wait()
	require.True(t, every2s.is("pod1", "pod2"), "the 2s handler's resync at 2s: %v", every2s.got())
	require.Empty(t, never.got(), "a handler without a period was resynced")
	require.Empty(t, every3s.got(), "the 3s handler was resynced at 2s")
	every2s.reset()

	time.Sleep(time.Second)
	synctest.Wait()
	require.True(t, every3s.is("pod1", "pod2"), "the 3s handler's resync at 3s: %v", every3s.got())
	require.Empty(t, never.got(), "a handler without a period was resynced")
	require.Empty(t, every2s.got(), "the 2s handler was resynced at 3s")
}

// Each handler keeps the resync period it asked for, whatever the informer's default and the
// other handlers' — none (0) stays none — and is resynced at that period: client-go's informer
// checks every handler at the shortest period asked before it started, and resyncs each at its
// own.
func TestClientGoResyncCheckPeriod(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	clock := clockx.NewMock(time.Now())
	inf := rewatchInformer(t, WithOptions(Options{Clock: clock})(src, &corev1.Pod{}, 12*time.Hour, nil))
	periods := []time.Duration{0, time.Minute, 55 * time.Second, 5 * time.Second}
	handlers := make([]*received, len(periods))
	var regs []cache.ResourceEventHandlerRegistration
	for i, p := range periods {
		handlers[i] = &received{}
		reg, err := inf.AddEventHandlerWithResyncPeriod(handlers[i], p)
		require.NoError(t, err)
		regs = append(regs, reg)
		for j := range regs {
			require.Equal(t, periods[j], regs[j].(*registration).l.resync.period, "handler %d after %d were added", j, i+1)
		}
	}
	runInformer(t, inf)
	for i, h := range handlers {
		require.Eventually(t, func() bool { return h.is("pod1") }, 10*time.Second, time.Millisecond, "handler %d: the initial list", i)
		h.reset()
	}
	// At 5 s only the 5 s handler is due; at 55 s the 55 s one too; at 60 s the 1 min one.
	base := clock.Now()
	resyncedBy := func(at time.Duration, due ...int) {
		t.Helper()
		clock.Set(base.Add(at))
		for _, i := range due {
			require.Eventually(t, func() bool { return slices.Contains(handlers[i].got(), "pod1") }, 10*time.Second, time.Millisecond,
				"handler %d (every %s) not resynced by %s", i, periods[i], at)
		}
		time.Sleep(settle)
		for i, h := range handlers {
			if !slices.Contains(due, i) {
				require.Empty(t, h.got(), "handler %d (every %s) resynced by %s", i, periods[i], at)
			}
			h.reset()
		}
	}
	resyncedBy(5*time.Second, 3)
	resyncedBy(55*time.Second, 2, 3)
	resyncedBy(time.Minute, 1, 3)
}

// A handler added while the informer starts is no race (run with -race).
func TestClientGoSharedInformerInitializationRace(t *testing.T) {
	src := fakeSource(t)
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	var h received
	added := make(chan struct{})
	go func() {
		defer close(added)
		_, _ = inf.AddEventHandlerWithResyncPeriod(&h, 0)
	}()
	runInformer(t, inf)
	<-added
}

// A watch that ends while changes are made that it does not deliver: the informer resumes, and
// every handler sees the changes, a handler with a resync period the whole state at its period.
func TestClientGoSharedInformerWatchDisruption(t *testing.T) {
	src := fakeSource(t)
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", UID: "pod1", ResourceVersion: "1"}})
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "2"}})
	clock := clockx.NewMock(time.Now())
	inf := WithOptions(Options{Clock: clock})(src, &corev1.Pod{}, time.Second, nil)
	var noResync, resync received
	_, err := inf.AddEventHandlerWithResyncPeriod(&noResync, 0)
	require.NoError(t, err)
	_, err = inf.AddEventHandlerWithResyncPeriod(&resync, time.Second)
	require.NoError(t, err)
	runInformer(t, inf)
	noResync.settlesOn(t, "pod1", "pod2")
	resync.settlesOn(t, "pod1", "pod2")

	// Changes the watch does not deliver: only a resumed watch or a relist sees them.
	src.AddDropWatch(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod3", UID: "pod3", ResourceVersion: "3"}})
	src.ModifyDropWatch(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "4"}})
	noResync.settlesOn(t, "pod1", "pod2")
	resync.settlesOn(t, "pod1", "pod2")
	noResync.reset()
	resync.reset()

	clock.Add(time.Second) // the resync handler's period
	src.ResetWatch()       // the connection lost
	// Whatever the reflector waits before it watches again passes on the mock clock; the
	// handler with a period is resynced meanwhile, which it expects anyway.
	require.Eventually(t, func() bool {
		if noResync.is("pod2", "pod3") && resync.is("pod1", "pod2", "pod3") {
			return true
		}
		clock.Add(100 * time.Millisecond)
		return false
	}, 10*time.Second, 10*time.Millisecond, "no resync: %v, resync: %v", noResync.got(), resync.got())
	time.Sleep(settle)
	require.True(t, noResync.is("pod2", "pod3"), "no resync: %v", noResync.got())
}

// A LIST that fails reaches the watch-error handler with the error the ListerWatcher returned.
// The watch-list the informer tried first, and fell back from, is no failure it hears of.
func TestClientGoSharedInformerErrorHandling(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	src.ListError = fmt.Errorf("Access Denied")
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	errs := make(chan error, 100)
	require.NoError(t, inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	runInformer(t, inf)
	select {
	case err := <-errs:
		require.ErrorContains(t, err, "Access Denied", "the first error the handler heard of")
	case <-time.After(10 * time.Second):
		t.Fatal("the watch-error handler never heard of the failed LIST")
	}
}

// SetTransform and SetWatchErrorHandler called while the informer starts are no race (run with
// -race); once it has started they are refused.
func TestClientGoSharedInformerStartRace(t *testing.T) {
	src := fakeSource(t)
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	done := make(chan struct{})
	var setters sync.WaitGroup
	setters.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			_ = inf.SetTransform(func(obj any) (any, error) { return obj, nil })
			_ = inf.SetWatchErrorHandler(func(*cache.Reflector, error) {})
		}
	})
	stop := runInformer(t, inf)
	SyncedWithin(t, inf.HasSynced)
	close(done)
	setters.Wait()
	require.Error(t, inf.SetTransform(func(obj any) (any, error) { return obj, nil }), "a transform set after the start")
	stop()
}

// The transform is applied to each object before the handlers are given it.
func TestClientGoSharedInformerTransformer(t *testing.T) {
	src := fakeSource(t)
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod1", UID: "pod1", ResourceVersion: "1"}})
	src.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod2", UID: "pod2", ResourceVersion: "2"}})
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	require.NoError(t, inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.SetName(strings.ToUpper(p.GetName()))
		}
		return obj, nil
	}))
	var h received
	_, err := inf.AddEventHandler(&h)
	require.NoError(t, err)
	runInformer(t, inf)
	h.settlesOn(t, "POD1", "POD2")
}

// Removing a handler unregisters it, one at a time.
func TestClientGoSharedInformerRemoveHandler(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	reg1, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	reg2, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	require.Equal(t, 2, handlerCount(inf))
	require.NoError(t, inf.RemoveEventHandler(reg2))
	require.Equal(t, 1, handlerCount(inf))
	require.NoError(t, inf.RemoveEventHandler(reg1))
	require.Zero(t, handlerCount(inf))
}

// Removing another informer's registration is no error and removes nothing from either.
func TestClientGoSharedInformerRemoveForeignHandler(t *testing.T) {
	src, src2 := fakeSource(t), fakeSource(t)
	src.Add(pod("pod1"))
	src2.Add(pod("pod1"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	inf2 := rewatchInformer(t, NewSharedInformer(src2, &corev1.Pod{}, time.Second))
	reg1, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	reg2, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	check := func() {
		t.Helper()
		require.Equal(t, 2, handlerCount(inf))
		require.Zero(t, handlerCount(inf2))
		require.True(t, registered(inf, reg1))
		require.True(t, registered(inf, reg2))
		require.False(t, registered(inf2, reg1))
		require.False(t, registered(inf2, reg2))
	}
	check()
	require.NoError(t, inf2.RemoveEventHandler(reg1), "removing another informer's registration")
	check()
	require.NoError(t, inf.RemoveEventHandler(reg2))
	require.Equal(t, 1, handlerCount(inf))
	require.NoError(t, inf.RemoveEventHandler(reg1))
	require.Zero(t, handlerCount(inf))
}

// The same handler added twice is two registrations, removed one at a time.
func TestClientGoSharedInformerMultipleRegistration(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	h := &cache.ResourceEventHandlerFuncs{}
	reg1, err := inf.AddEventHandler(h)
	require.NoError(t, err)
	require.True(t, registered(inf, reg1))
	reg2, err := inf.AddEventHandler(h)
	require.NoError(t, err)
	require.True(t, registered(inf, reg2))
	require.Equal(t, 2, handlerCount(inf))
	require.NoError(t, inf.RemoveEventHandler(reg1))
	require.False(t, registered(inf, reg1))
	require.True(t, registered(inf, reg2), "removing one registration removed the other")
	require.Equal(t, 1, handlerCount(inf))
	require.NoError(t, inf.RemoveEventHandler(reg2))
	require.False(t, registered(inf, reg2))
	require.Zero(t, handlerCount(inf))
}

// Removing a registration twice is no error.
func TestClientGoRemovingRemovedSharedInformer(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	reg, err := inf.AddEventHandler(&cache.ResourceEventHandlerFuncs{})
	require.NoError(t, err)
	require.NoError(t, inf.RemoveEventHandler(reg))
	require.False(t, registered(inf, reg))
	require.NoError(t, inf.RemoveEventHandler(reg), "removing a removed registration")
	require.False(t, registered(inf, reg))
}

// A hundred goroutines add and remove handlers while thousands of changes flow and the informer
// stops under them: no race (run with -race), and every error is the informer having stopped.
func TestClientGoSharedInformerHandlerAbuse(t *testing.T) {
	src := fakeSource(t)
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	stopInformer := runInformer(t, inf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	worker := func() error {
		funcs := cache.ResourceEventHandlerDetailedFuncs{
			AddFunc:    func(any, bool) {},
			UpdateFunc: func(any, any) {},
			DeleteFunc: func(any) {},
		}
		var regs []cache.ResourceEventHandlerRegistration
		for ctx.Err() == nil {
			if rand.IntN(2) == 0 {
				reg, err := inf.AddEventHandlerWithResyncPeriod(funcs, time.Second)
				if err != nil {
					if strings.Contains(err.Error(), "stopped already") {
						return nil
					}
					return err
				}
				regs = append(regs, reg)
				continue
			}
			if len(regs) == 0 {
				continue
			}
			i := rand.IntN(len(regs))
			if err := inf.RemoveEventHandler(regs[i]); err != nil {
				return err
			}
			regs = slices.Delete(regs, i, i+1)
		}
		return nil
	}
	errs := make(chan error, 100)
	var workers sync.WaitGroup
	for range 100 {
		workers.Go(func() { errs <- worker() })
	}

	var pods []*corev1.Pod
	for i := range 10000 {
		if len(pods) == 0 {
			p := pod("pod" + strconv.Itoa(i))
			pods = append(pods, p)
			src.Add(p.DeepCopy())
		}
		switch rand.IntN(3) {
		case 0:
			p := pod("pod" + strconv.Itoa(i))
			pods = append(pods, p)
			src.Add(p.DeepCopy())
		case 1:
			src.Modify(pods[rand.IntN(len(pods))].DeepCopy())
		case 2:
			j := rand.IntN(len(pods))
			src.Delete(pods[j].DeepCopy())
			pods = slices.Delete(pods, j, j+1)
		}
	}
	// The informer stops while the workers still add and remove, then the workers stop.
	stopInformer()
	cancel()
	workers.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// IsStopped is false until Run has returned, and the informer has started exactly once Run
// was called.
func TestClientGoStateSharedInformer(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, time.Second))
	var h received
	_, err := inf.AddEventHandlerWithResyncPeriod(&h, 0)
	require.NoError(t, err)
	require.False(t, inf.started.Load(), "started after construction")
	require.False(t, inf.IsStopped(), "stopped after construction")
	stop := runInformer(t, inf)
	h.settlesOn(t, "pod1")
	require.True(t, inf.started.Load(), "not started while handling events")
	require.False(t, inf.IsStopped(), "stopped while running")
	stop()
	require.True(t, inf.IsStopped(), "not stopped once Run returned")
	require.True(t, inf.started.Load(), "no longer started once stopped")
}

// A handler added to a stopped informer is refused, in client-go's words.
func TestClientGoAddOnStoppedSharedInformer(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	runInformer(t, inf)()
	require.True(t, inf.IsStopped())
	_, err := inf.AddEventHandlerWithResyncPeriod(&received{}, 0)
	require.Error(t, err)
	require.True(t, strings.HasSuffix(err.Error(), "was not added to shared informer because it has stopped already"), err.Error())
}

// Removing a handler from a stopped informer is no error.
func TestClientGoRemoveOnStoppedSharedInformer(t *testing.T) {
	src := fakeSource(t)
	src.Add(pod("pod1"))
	inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
	reg, err := inf.AddEventHandlerWithResyncPeriod(&received{}, 0)
	require.NoError(t, err)
	runInformer(t, inf)()
	require.True(t, inf.IsStopped())
	require.NoError(t, inf.RemoveEventHandler(reg))
}

// A handler removed while the informer runs is unregistered at once and given nothing more.
func TestClientGoRemoveWhileActive(t *testing.T) {
	src := fakeSource(t)
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, 0))
	var h received
	reg, err := inf.AddEventHandler(&h)
	require.NoError(t, err)
	runInformer(t, inf)
	src.Add(pod("pod1"))
	h.settlesOn(t, "pod1")
	require.NoError(t, inf.RemoveEventHandler(reg))
	require.False(t, registered(inf, reg))
	src.Add(pod("pod2"))
	h.settlesOn(t, "pod1")
}

// A registration is synced once the informer has synced and its handler has been given the
// initial state: never before the informer runs, and, for a handler added while it runs, not
// before that handler has been given the cache's contents.
func TestClientGoAddWhileActive(t *testing.T) {
	src := fakeSource(t)
	inf := rewatchInformer(t, NewSharedInformer(src, &corev1.Pod{}, 0))
	var first, second received
	reg1, err := inf.AddEventHandler(&first)
	require.NoError(t, err)
	require.False(t, reg1.HasSynced(), "synced before Run")
	runInformer(t, inf)
	src.Add(pod("pod1"))
	first.settlesOn(t, "pod1")
	select {
	case <-reg1.HasSyncedChecker().Done():
		require.True(t, reg1.HasSynced(), "HasSynced false once its checker said synced")
	case <-time.After(10 * time.Second):
		t.Fatal("not synced 10 s after Run")
	}

	second.hold.Lock() // its handler waits: it cannot have been given the cache's contents
	reg2, err := inf.AddEventHandler(&second)
	require.NoError(t, err)
	require.False(t, reg2.HasSynced(), "synced before its handler was given anything")
	second.hold.Unlock()
	src.Add(pod("pod2"))
	second.settlesOn(t, "pod1", "pod2")
	require.True(t, reg2.HasSynced(), "not synced once its handler was given everything")
	require.True(t, registered(inf, reg1))
	require.True(t, registered(inf, reg2))
	first.settlesOn(t, "pod1", "pod2")
}

// An informer stops every goroutine it started, whether a handler was added before it ran,
// after it synced, or it never ran: the package's TestMain checks with goleak that none is
// left.
func TestClientGoShutdown(t *testing.T) {
	t.Run("no-context", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, time.Second)
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
		require.NoError(t, err)
		defer func() { require.NoError(t, inf.RemoveEventHandler(reg)) }()
		runInformer(t, inf)
		require.Eventually(t, inf.HasSynced, time.Minute, time.Millisecond)
	})
	t.Run("no-context-later", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, time.Second)
		runInformer(t, inf)
		require.Eventually(t, inf.HasSynced, time.Minute, time.Millisecond)
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
		require.NoError(t, err)
		require.NoError(t, inf.RemoveEventHandler(reg))
	})
	t.Run("no-run", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, time.Second)
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}})
		require.NoError(t, err)
	})
}

// A handler's panic, with utilruntime.ReallyCrash false, is logged "Observed a panic" at the
// line that panicked, through klog's process-wide logger or the handler's HandlerOptions.Logger
// (with its name), once per panicking call; each panic costs the handler a pause of a second
// before its next call.
func TestClientGoEventPanics(t *testing.T) {
	var (
		out    *syncbuf.Buffer
		logger klog.Logger
		src    *fcache.FakeControllerSource
	)
	setUp := func(t *testing.T) {
		t.Cleanup(klog.CaptureState().Restore)
		out = &syncbuf.Buffer{}
		logger = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(out)))
		reallyCrash := utilruntime.ReallyCrash
		utilruntime.ReallyCrash = false
		t.Cleanup(func() { utilruntime.ReallyCrash = reallyCrash })
		src = fakeSource(t)
		src.Add(pod("pod1"))
	}
	panicking := func(ctx context.Context) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			klog.FromContext(ctx).Info("about to panic", "pod", klog.KObj(obj.(*corev1.Pod)))
			panic("fake panic")
		}}
	}
	_, file, line, _ := runtime.Caller(0)
	panicLine := line - 3 // the panic above
	file = file[strings.LastIndex(file, "/")+1:]
	logged := func(name string) string {
		if name == "" {
			return fmt.Sprintf(`%s:%d] "Observed a panic" panic="fake panic"`, file, panicLine)
		}
		return fmt.Sprintf(`%s:%d] "Observed a panic" logger=%q panic="fake panic"`, file, panicLine, name)
	}

	t.Run("simple", func(t *testing.T) {
		setUp(t)
		klog.SetLogger(logger)
		inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
		reg, err := inf.AddEventHandler(panicking(context.Background()))
		require.NoError(t, err)
		defer func() { require.NoError(t, inf.RemoveEventHandler(reg)) }()
		runInformer(t, inf)
		require.Eventually(t, inf.HasSynced, time.Minute, time.Millisecond)
		require.True(t, within(time.Minute, func() bool { return strings.Contains(out.String(), logged("")) }),
			"no panic logged; the log:\n%s", out.String())
	})

	t.Run("many", func(t *testing.T) {
		setUp(t)
		const pods = 5
		for i := 2; i <= pods; i++ {
			src.Add(pod(fmt.Sprintf("pod%d", i)))
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		inf := NewSharedInformer(src, &corev1.Pod{}, time.Second)
		var names []string
		for i := 1; i <= 2; i++ {
			name := fmt.Sprintf("fake-event-handler-%d", i)
			names = append(names, name)
			l := klog.LoggerWithName(logger, name)
			reg, err := inf.AddEventHandlerWithOptions(panicking(klog.NewContext(ctx, l)), cache.HandlerOptions{Logger: &l})
			require.NoError(t, err)
			defer func() { require.NoError(t, inf.RemoveEventHandler(reg)) }()
		}
		start := time.Now()
		var wg wait.Group
		wg.StartWithContext(klog.NewContext(ctx, klog.LoggerWithName(logger, "informer")), inf.RunWithContext)
		defer func() {
			cancel()
			wg.Wait()
		}()
		require.Eventually(t, inf.HasSynced, time.Minute, time.Millisecond)
		require.True(t, within(time.Minute, func() bool {
			for _, name := range names {
				if strings.Count(out.String(), logged(name)) != pods {
					return false
				}
			}
			return true
		}), "want %d panics logged per handler; the log:\n%s", pods, out.String())
		require.GreaterOrEqual(t, time.Since(start), (pods-1)*time.Second, "a handler paused less than a second after each panic")
	})
}

// within polls cond until it holds or d has passed; it says whether it held. (A test's message
// then shows what was there at the end, which require.Eventually's arguments cannot.)
func within(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// blockingHandler's add blocks until release is closed, then sends its object on sent, noting
// a panic (a send on a closed channel) instead of raising it.
type blockingHandler struct {
	started, release, finished chan struct{}
	sent                       chan *corev1.Pod
	panicked                   any
}

func newBlockingHandler() *blockingHandler {
	return &blockingHandler{started: make(chan struct{}), release: make(chan struct{}), finished: make(chan struct{}), sent: make(chan *corev1.Pod, 1)}
}

func (b *blockingHandler) funcs() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		close(b.started)
		<-b.release
		defer close(b.finished)
		defer func() { b.panicked = recover() }()
		b.sent <- obj.(*corev1.Pod)
	}}
}

// RemoveEventHandler returns at once, while a call to the handler is under way, and lets that
// call complete: a handler that writes to what its caller closes after the removal may fail.
func TestClientGoRemoveEventHandler_AsynchronousPanic(t *testing.T) {
	src := fakeSource(t)
	inf := NewSharedInformer(src, &corev1.Pod{}, 0)
	runInformer(t, inf)
	b := newBlockingHandler()
	reg, err := inf.AddEventHandler(b.funcs())
	require.NoError(t, err)
	src.Add(pod("pod1"))
	<-b.started
	require.NoError(t, inf.RemoveEventHandler(reg), "RemoveEventHandler while a call is under way")
	close(b.sent)
	close(b.release)
	<-b.finished
	require.NotNil(t, b.panicked, "the call under way completed after the removal")
}

// cache.ShutDownEventHandler returns once no call to the handler is running: what the handler
// writes to may be closed after it, safely.
func TestClientGoRemoveEventHandler_SynchronousShutdown(t *testing.T) {
	src := fakeSource(t)
	inf := NewSharedInformer(src, &corev1.Pod{}, 0)
	runInformer(t, inf)
	b := newBlockingHandler()
	reg, err := inf.AddEventHandler(b.funcs())
	require.NoError(t, err)
	src.Add(pod("pod1"))
	<-b.started
	close(b.release)
	require.NoError(t, cache.ShutDownEventHandler(inf, reg))
	close(b.sent)
	<-b.finished
	require.Nil(t, b.panicked, "the handler ran after ShutDownEventHandler returned")
}

// cache.ShutDownEventHandler returns for a handler of an informer that never ran, of one added
// after the informer synced, and of one added before the informer ran.
func TestClientGoShutDownEventHandler_Lifecycles(t *testing.T) {
	noop := cache.ResourceEventHandlerFuncs{AddFunc: func(any) {}}
	synced := func(t *testing.T, inf cache.SharedInformer) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.True(t, cache.WaitFor(ctx, "informer sync", inf.HasSyncedChecker()), "the informer did not sync")
	}
	t.Run("InformerNeverStarted", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, 0)
		reg, err := inf.AddEventHandler(noop)
		require.NoError(t, err)
		require.NoError(t, cache.ShutDownEventHandler(inf, reg))
	})
	t.Run("StartedThenAddedThenShutDown", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, 0)
		runInformer(t, inf)
		synced(t, inf)
		reg, err := inf.AddEventHandler(noop)
		require.NoError(t, err)
		require.NoError(t, cache.ShutDownEventHandler(inf, reg))
	})
	t.Run("AddedThenStartedThenShutDown", func(t *testing.T) {
		inf := NewSharedInformer(fakeSource(t), &corev1.Pod{}, 0)
		reg, err := inf.AddEventHandler(noop)
		require.NoError(t, err)
		runInformer(t, inf)
		synced(t, inf)
		require.NoError(t, cache.ShutDownEventHandler(inf, reg))
	})
}

package informer_test

// Conformance: behaviours a controller can observe in client-go's SharedIndexInformer, checked
// on client-go's informer and on rewatch's side by side, over the same kind of source
// (client-go's FakeControllerSource). Each test states the behaviour it pins; the tests are
// this project's, written from client-go's documented behaviour.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/rewatch/rewatch/informer"
)

type implementation struct {
	name string
	new  func(lw cache.ListerWatcher) cache.SharedIndexInformer
}

// listOnly makes both informers list and watch: the FakeControllerSource has no watch-list, and
// each honours a ListerWatcher that says so (informer.WatchListFor).
type listOnly struct{}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

var implementations = []implementation{
	{"client-go", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	}},
	{"rewatch", func(lw cache.ListerWatcher) cache.SharedIndexInformer {
		return informer.WithOptions(quiet)(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	}},
}

// source is a FakeControllerSource as a ListerWatcher both informers take.
// It shuts down when the test ends, after the informers run on it (cleanups run last first).
func source(t *testing.T) (*fcache.FakeControllerSource, cache.ListerWatcher) {
	src := fcache.NewFakeControllerSource()
	t.Cleanup(src.Shutdown)
	lw := &cache.ListWatch{ListFunc: src.List, WatchFunc: src.Watch}
	return src, cache.ToListWatcherWithWatchListSemantics(lw, listOnly{})
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

// forEach runs test once per implementation.
func forEach(t *testing.T, test func(t *testing.T, impl implementation)) {
	for _, impl := range implementations {
		t.Run(impl.name, func(t *testing.T) { test(t, impl) })
	}
}

func objName(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return m.GetName()
}

// names is a handler that records the names of the objects it is given as adds.
type names struct {
	mu    sync.Mutex
	added []string
}

func (n *names) OnAdd(obj any, _ bool) {
	n.mu.Lock()
	n.added = append(n.added, objName(obj))
	n.mu.Unlock()
}
func (n *names) OnUpdate(_, _ any) {}
func (n *names) OnDelete(any)      {}

func (n *names) get() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.added...)
}

func (n *names) waitFor(t *testing.T, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, got := range n.get() {
			if got == name {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "never saw %s; saw %v", name, n.get())
}

// A handler's panic is recovered around the call (utilruntime.HandleCrashWithLogger with the
// handler's HandlerOptions.Logger): it is logged there, the PanicHandlers run, and where
// utilruntime.ReallyCrash is false the notification is dropped and the handler gets the next
// one (after a pause of a second) instead of the process ending.
func TestConformanceHandlerPanicIsRecovered(t *testing.T) {
	reallyCrash, panicHandlers := utilruntime.ReallyCrash, utilruntime.PanicHandlers
	t.Cleanup(func() { utilruntime.ReallyCrash, utilruntime.PanicHandlers = reallyCrash, panicHandlers })
	utilruntime.ReallyCrash = false
	var panics sync.Map // the values the PanicHandlers were given
	utilruntime.PanicHandlers = append(slices.Clone(panicHandlers), func(_ context.Context, r any) { panics.Store(r, true) })
	forEach(t, func(t *testing.T, impl implementation) {
		src, lw := source(t)
		src.Add(configMap("before"))
		inf := impl.new(lw)
		var logged sync.Map
		logger := funcr.New(func(_, args string) { logged.Store(args, true) }, funcr.Options{})
		var h names
		boom := "conformance-boom from " + impl.name
		handler := cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if objName(obj) == "boom" {
				panic(boom)
			}
			h.OnAdd(obj, false)
		}}
		reg, err := inf.AddEventHandlerWithOptions(handler, cache.HandlerOptions{Logger: &logger})
		require.NoError(t, err)
		run(t, inf)
		h.waitFor(t, "before")
		src.Add(configMap("boom"))
		src.Add(configMap("after"))
		h.waitFor(t, "after")
		require.Equal(t, []string{"before", "after"}, h.get(), "the panicking notification is dropped, not retried")
		_, ran := panics.Load(boom)
		require.True(t, ran, "the PanicHandlers were not given the panic")
		found := false
		logged.Range(func(k, _ any) bool {
			found = strings.Contains(k.(string), boom)
			return !found
		})
		require.True(t, found, "the panic was not logged with the handler's logger")
		require.True(t, reg.HasSynced())
	})
}

// With utilruntime.ReallyCrash true (its default) a handler's panic is raised again after it
// was logged: the process ends, as with client-go's informer. The test runs itself as a child
// process per implementation and reads how that child ended.
func TestConformanceHandlerPanicEndsTheProcessWithReallyCrash(t *testing.T) {
	const childEnv = "REWATCH_CONFORMANCE_CRASH"
	if implName := os.Getenv(childEnv); implName != "" {
		for _, impl := range implementations {
			if impl.name != implName {
				continue
			}
			utilruntime.ReallyCrash = true
			src, lw := source(t)
			inf := impl.new(lw)
			logger := funcr.New(func(_, args string) { fmt.Fprintln(os.Stderr, args) }, funcr.Options{})
			_, err := inf.AddEventHandlerWithOptions(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { panic("conformance-crash from " + implName) }},
				cache.HandlerOptions{Logger: &logger})
			require.NoError(t, err)
			run(t, inf)
			src.Add(configMap("boom"))
			time.Sleep(time.Minute) // the panic ends the process before this does
			t.Fatal("the handler's panic did not end the process")
		}
		t.Fatalf("no implementation %q", implName)
	}
	forEach(t, func(t *testing.T, impl implementation) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConformanceHandlerPanicEndsTheProcessWithReallyCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+impl.name)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "the child did not fail: %s", out)
		require.Equal(t, 2, exit.ExitCode(), "not a panic's exit code: %s", out)
		require.Contains(t, string(out), "panic: conformance-crash from "+impl.name)
		require.Contains(t, string(out), "Observed a panic", "the panic was not handled (logged) before it was raised again")
	})
}

// A registration has ShutdownChan, so cache.ShutDownEventHandler works: it returns once the
// handler is removed and no call to it is running, and the handler is called no more. It
// also closes when the informer stops.
func TestConformanceShutDownEventHandler(t *testing.T) {
	forEach(t, func(t *testing.T, impl implementation) {
		src, lw := source(t)
		inf := impl.new(lw)
		inCall, release := make(chan struct{}), make(chan struct{})
		var calls atomic.Int64
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			calls.Add(1)
			if objName(obj) == "slow" {
				close(inCall)
				<-release
			}
		}})
		require.NoError(t, err)
		var other names
		otherReg, err := inf.AddEventHandler(&other)
		require.NoError(t, err)
		stop := run(t, inf)
		src.Add(configMap("slow"))
		<-inCall
		shutDown := make(chan error, 1)
		removing := &signalRemoval{SharedIndexInformer: inf, removed: make(chan struct{})}
		go func() { shutDown <- cache.ShutDownEventHandler(removing, reg) }()
		// "later" comes once the handler is removed, so it must never reach it; one added
		// before could be handed to it before ShutDownEventHandler returns.
		<-removing.removed
		src.Add(configMap("later"))
		other.waitFor(t, "later")
		withShutdown, ok := reg.(interface{ ShutdownChan() <-chan struct{} })
		require.True(t, ok, "the registration has no ShutdownChan")
		select {
		case <-withShutdown.ShutdownChan():
			t.Fatal("ShutdownChan closed while a call to the handler was running")
		case err := <-shutDown:
			t.Fatalf("ShutDownEventHandler returned (%v) while a call to the handler was running", err)
		default:
		}
		close(release)
		select {
		case err := <-shutDown:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("ShutDownEventHandler did not return once the call had")
		}
		src.Add(configMap("last"))
		other.waitFor(t, "last")
		require.Equal(t, int64(1), calls.Load(), "the handler was called after ShutDownEventHandler returned")

		stop()
		select {
		case <-otherReg.(interface{ ShutdownChan() <-chan struct{} }).ShutdownChan():
		case <-time.After(10 * time.Second):
			t.Fatal("ShutdownChan did not close when the informer stopped")
		}
	})
}

// signalRemoval closes removed once RemoveEventHandler has returned: the point
// cache.ShutDownEventHandler then waits from.
type signalRemoval struct {
	cache.SharedIndexInformer
	removed chan struct{}
}

func (s *signalRemoval) RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error {
	defer close(s.removed)
	return s.SharedIndexInformer.RemoveEventHandler(handle)
}

// AddEventHandler on a stopped informer fails with client-go's wording, which callers match.
func TestConformanceAddEventHandlerAfterStop(t *testing.T) {
	var errs []string
	forEach(t, func(t *testing.T, impl implementation) {
		_, lw := source(t)
		inf := impl.new(lw)
		stop := run(t, inf)
		informer.SyncedWithin(t, inf.HasSynced)
		stop()
		require.True(t, inf.IsStopped())
		handler := cache.ResourceEventHandlerFuncs{}
		reg, err := inf.AddEventHandler(handler)
		require.Nil(t, reg)
		require.ErrorContains(t, err, "was not added to shared informer because it has stopped already")
		errs = append(errs, err.Error())
	})
	require.Len(t, errs, len(implementations))
	require.Equal(t, errs[0], errs[1], "the two informers word the error differently")
}

// RemoveEventHandler with a registration of another informer is no error and changes nothing;
// with a handle that is no registration at all it is an error.
func TestConformanceRemoveForeignRegistration(t *testing.T) {
	forEach(t, func(t *testing.T, impl implementation) {
		src, lw := source(t)
		_, otherLW := source(t)
		inf, other := impl.new(lw), impl.new(otherLW)
		var h names
		reg, err := inf.AddEventHandler(&h)
		require.NoError(t, err)
		otherReg, err := other.AddEventHandler(cache.ResourceEventHandlerFuncs{})
		require.NoError(t, err)
		run(t, inf)
		run(t, other)
		require.NoError(t, other.RemoveEventHandler(reg), "removing another informer's registration")
		require.NoError(t, inf.RemoveEventHandler(otherReg), "removing another informer's registration")
		src.Add(configMap("still-delivered"))
		h.waitFor(t, "still-delivered")
		require.Error(t, inf.RemoveEventHandler(notARegistration{}), "a handle that is no registration")
		require.NoError(t, inf.RemoveEventHandler(reg))
		require.NoError(t, inf.RemoveEventHandler(reg), "removing twice")
	})
}

type notARegistration struct{}

func (notARegistration) HasSynced() bool                     { return true }
func (notARegistration) HasSyncedChecker() cache.DoneChecker { return nil }

// Handler churn: handlers are added and removed while a stream of changes flows. Each handler
// sees a consistent story — the cache as adds when it joins, then every later change exactly
// once, in order (no add for a key it holds, no update or delete for one it does not, each
// update's old object the one it holds) — a handler there throughout sees every change, the
// watch is not held back (the informer reaches the last change), and each removed handler's
// ShutdownChan closes.
func TestConformanceHandlerChurn(t *testing.T) {
	const keys, changes, churners = 50, 3000, 4
	forEach(t, func(t *testing.T, impl implementation) {
		src, lw := source(t)
		inf := impl.new(lw)
		stable := newStoryChecker()
		_, err := inf.AddEventHandler(stable)
		require.NoError(t, err)
		run(t, inf)
		informer.SyncedWithin(t, inf.HasSynced)

		var done atomic.Bool
		var churn sync.WaitGroup
		var kept []*storyChecker
		var keptMu sync.Mutex
		failures := make(chan string, churners)
		for c := range churners {
			churn.Go(func() {
				for round := 0; !done.Load(); round++ {
					h := newStoryChecker()
					reg, err := inf.AddEventHandler(h)
					if err != nil {
						failures <- err.Error()
						return
					}
					if round%7 == c { // some stay to the end
						keptMu.Lock()
						kept = append(kept, h)
						keptMu.Unlock()
						continue
					}
					time.Sleep(time.Duration(round%3) * time.Millisecond)
					if err := cache.ShutDownEventHandler(inf, reg); err != nil {
						failures <- err.Error()
						return
					}
				}
			})
		}
		live := map[string]*corev1.ConfigMap{}
		for n := range changes {
			key := "cm-" + strconv.Itoa(n%keys)
			switch obj, ok := live[key]; {
			case !ok:
				live[key] = configMap(key)
				src.Add(live[key].DeepCopy())
			case n%5 == 0:
				src.Delete(obj.DeepCopy())
				delete(live, key)
			default:
				obj.Data = map[string]string{"n": strconv.Itoa(n)}
				src.Modify(obj.DeepCopy())
			}
		}
		last := strconv.Itoa(changes)
		require.Eventually(t, func() bool { return inf.LastSyncResourceVersion() == last }, time.Minute, time.Millisecond)
		done.Store(true)
		churn.Wait()
		close(failures)
		for f := range failures {
			t.Fatal(f)
		}
		// client-go's reflector runs ahead of its indexer, so the final state is the source's.
		list, err := src.List(metav1.ListOptions{})
		require.NoError(t, err)
		items, err := meta.ExtractList(list)
		require.NoError(t, err)
		want := map[string]string{}
		for _, item := range items {
			want[objName(item)] = rvOf(item)
		}
		require.Eventually(t, func() bool { return maps.Equal(stateOf(inf.GetStore().List()), want) }, time.Minute, time.Millisecond)
		require.Eventually(t, func() bool { return stable.equals(want) }, time.Minute, time.Millisecond)
		var stats any = "n/a"
		if r, ok := inf.(*informer.Informer); ok {
			stats = r.Stats()
		}
		require.Equal(t, changes, stable.calls(), "the handler there throughout missed changes; its violations: %v; the informer's stats: %+v", stable.violations(), stats)
		for _, h := range append(kept, stable) {
			require.Eventually(t, func() bool { return h.equals(want) }, time.Minute, time.Millisecond)
			require.Empty(t, h.violations())
		}
	})
}

// storyChecker is a handler that keeps the state its notifications describe and writes down
// every notification that contradicts it.
type storyChecker struct {
	mu     sync.Mutex
	state  map[string]string // name → resourceVersion
	n      int
	broken []string
}

func newStoryChecker() *storyChecker { return &storyChecker{state: map[string]string{}} }

func rvOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func (s *storyChecker) OnAdd(obj any, _ bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	name := objName(obj)
	if rv, ok := s.state[name]; ok {
		s.broken = append(s.broken, fmt.Sprintf("add %s@%s while holding @%s", name, rvOf(obj), rv))
	}
	s.state[name] = rvOf(obj)
}

func (s *storyChecker) OnUpdate(old, obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	name := objName(obj)
	if rv, ok := s.state[name]; !ok || rv != rvOf(old) {
		s.broken = append(s.broken, fmt.Sprintf("update %s %s→%s while holding %q (held: %v)", name, rvOf(old), rvOf(obj), rv, ok))
	}
	s.state[name] = rvOf(obj)
}

func (s *storyChecker) OnDelete(obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	name := objName(obj)
	if _, ok := s.state[name]; !ok {
		s.broken = append(s.broken, "delete of "+name+" not held")
	}
	delete(s.state, name)
}

func (s *storyChecker) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *storyChecker) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.broken)
}

func (s *storyChecker) equals(want map[string]string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Equal(s.state, want)
}

func stateOf(objs []any) map[string]string {
	out := map[string]string{}
	for _, obj := range objs {
		out[objName(obj)] = rvOf(obj)
	}
	return out
}

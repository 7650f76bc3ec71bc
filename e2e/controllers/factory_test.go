package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// seen is what one handler was told, in order.
type seen struct {
	mu     sync.Mutex
	events []notice
}

// notice is one handler call: its type, the object's key and resourceVersion, and for an update
// whether the object is the one the handler already had (a relist's replay).
type notice struct {
	typ, key, rv string
	replay       bool
}

func (s *seen) record(typ string, old, obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m := obj.(metav1.Object)
	n := notice{typ: typ, key: m.GetNamespace() + "/" + m.GetName(), rv: m.GetResourceVersion()}
	if o, ok := old.(metav1.Object); ok {
		n.replay = o.GetResourceVersion() == n.rv
	}
	s.mu.Lock()
	s.events = append(s.events, n)
	s.mu.Unlock()
}

func (s *seen) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.record("add", nil, obj) },
		UpdateFunc: func(old, obj any) { s.record("update", old, obj) },
		DeleteFunc: func(obj any) { s.record("delete", nil, obj) },
	}
}

// states is every (key, resourceVersion) a handler saw, replays left out, and how many replays
// there were. A key whose states went back in time is an error: on both servers a
// resourceVersion is an etcd-style revision, so a later state of a key has a larger one.
func (s *seen) states() (states map[string][]int, replays int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	states = map[string][]int{}
	for _, n := range s.events {
		if n.replay {
			replays++
			continue
		}
		rv, err := strconv.Atoi(n.rv)
		if err != nil {
			return nil, 0, fmt.Errorf("resourceVersion %q of %s: %w", n.rv, n.key, err)
		}
		if prev := states[n.key]; len(prev) > 0 && rv <= prev[len(prev)-1] {
			return nil, 0, fmt.Errorf("%s went back from rv %d to %d (%s)", n.key, prev[len(prev)-1], rv, n.typ)
		}
		states[n.key] = append(states[n.key], rv)
	}
	return states, replays, nil
}

// docs/semantics.md, the watch rows, behind client-go's SharedInformerFactory: a factory whose
// InformerFor is rewatch's informer and a factory with client-go's own, side by side on the same
// writes, each through its own fault proxy with the storm's mix. Both end with the server's
// state. rewatch's handler saw every state client-go's saw; the differences are the relists'
// doing: a relist can skip a state written and overwritten while the watch was down, client-go's
// replays every unchanged object as an update (old == new) where rewatch's replays none
// (docs/semantics.md, "Relists"), and client-go relists on more of these faults than rewatch,
// which relists only for the 410.
func TestSharedInformerFactoryThroughTheStorm(t *testing.T) {
	t.Parallel()
	forEachBackend(t, true, func(t *testing.T, b testbackend.Backend) {
		ns := namespace(t, b, "factory")
		writeRounds(t, b, ns, 1, 0)
		quiet := informer.Options{Logger: slog.New(slog.DiscardHandler)}

		kinds := []string{"rewatch", "client-go"}
		seenBy := map[string]*seen{}
		expiredBy := map[string]int{}
		firedBy := map[string]func() bool{}
		var transfersBy []func() int
		stop := make(chan struct{})
		var syncs []cache.InformerSynced
		for _, kind := range kinds {
			p, cfg := proxied(t, b)
			logRequestsOnFailure(t, kind, p)
			cs, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
			var inf cache.SharedIndexInformer
			if kind == "rewatch" {
				inf = factory.InformerFor(&corev1.ConfigMap{}, informer.NewInformerFuncIn(&corev1.ConfigMap{}, ns, nil, quiet))
				require.Same(t, inf.GetIndexer(), factory.Core().V1().ConfigMaps().Informer().GetIndexer(), "the factory hands out rewatch's informer")
			} else {
				inf = factory.Core().V1().ConfigMaps().Informer()
			}
			seenBy[kind] = &seen{}
			reg, err := inf.AddEventHandler(seenBy[kind].handler())
			require.NoError(t, err)
			syncs = append(syncs, reg.HasSynced)
			expired, allFired := storm(p)
			expiredBy[kind] = expired
			firedBy[kind] = allFired
			transfersBy = append(transfersBy, func() int { return fullStateTransfers(p) })
			factory.Start(stop)
			t.Cleanup(factory.Shutdown)
		}
		t.Cleanup(func() { close(stop) })
		require.True(t, cache.WaitForCacheSync(stop, syncs...), "the factories never synced")

		// One write per source per round, half a second apart: long enough that rewatch's
		// relist after the 410 (at once, at the last resourceVersion) cannot miss a state.
		start := time.Now()
		writeRounds(t, b, ns, 5, 500*time.Millisecond)
		// How long each informer took to get through the faults is its waiting: client-go's
		// backoff grows with every failure and relist, rewatch's resets on progress.
		rounds := time.Since(start)
		through := untilFired(t, b, ns, 500*time.Millisecond, 3*time.Minute, firedBy)
		for kind := range through {
			through[kind] += rounds
		}
		writeRounds(t, b, ns, 1, 0)

		server := serverState(t, direct(t, b), ns)
		for _, kind := range kinds {
			require.Eventually(t, func() bool {
				states, _, err := seenBy[kind].states()
				if err != nil {
					return false
				}
				for key, rv := range server {
					if s := states[key]; len(s) == 0 || s[len(s)-1] != rv {
						return false
					}
				}
				return true
			}, 2*time.Minute, 50*time.Millisecond, "%s's handler never saw the server's state", kind)
		}

		rewatchStates, rewatchReplays, err := seenBy["rewatch"].states()
		require.NoError(t, err, "rewatch")
		clientGoStates, clientGoReplays, err := seenBy["client-go"].states()
		require.NoError(t, err, "client-go")
		onlyRewatch, onlyClientGo := difference(rewatchStates, clientGoStates), difference(clientGoStates, rewatchStates)
		transfers := []int{transfersBy[0](), transfersBy[1]()}
		t.Logf("%s: through the faults in rewatch %v, client-go %v; full-state transfers rewatch %d, client-go %d (%d injected 410 each); "+
			"relist replays rewatch %d, client-go %d; states only rewatch's handler saw %d %v, only client-go's %d %v",
			b.Name(), through["rewatch"].Round(time.Second), through["client-go"].Round(time.Second), transfers[0], transfers[1],
			expiredBy["rewatch"], rewatchReplays, clientGoReplays,
			len(onlyRewatch), onlyRewatch, len(onlyClientGo), onlyClientGo)
		require.Empty(t, onlyClientGo, "client-go's handler saw states rewatch's never did")
		require.LessOrEqual(t, transfers[0], 1+expiredBy["rewatch"], "rewatch's informer listed more than once plus once per 410")
		require.Greater(t, transfers[0], 1, "the 410 never reached rewatch's reflector, so the bound was not tested")
		require.Zero(t, rewatchReplays, "rewatch's relist handed a handler unchanged objects as updates")
		require.GreaterOrEqual(t, transfers[1], transfers[0], "client-go's informer relisted less than rewatch's")
	})
}

// serverState is the resourceVersion of every configmap in ns, from a LIST made without the proxy.
func serverState(t *testing.T, cs kubernetes.Interface, ns string) map[string]int {
	l, err := cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]int{}
	for _, cm := range l.Items {
		rv, err := strconv.Atoi(cm.ResourceVersion)
		require.NoError(t, err)
		out[ns+"/"+cm.Name] = rv
	}
	return out
}

// difference lists the "key@rv" states in a but not in b, sorted.
func difference(a, b map[string][]int) []string {
	var out []string
	for key, rvs := range a {
		in := map[int]bool{}
		for _, rv := range b[key] {
			in[rv] = true
		}
		for _, rv := range rvs {
			if !in[rv] {
				out = append(out, fmt.Sprintf("%s@%d", key, rv))
			}
		}
	}
	sort.Strings(out)
	return out
}

// program is a small controller written against client-go's SharedInformerFactory: a
// namespace-scoped factory, a tweak with a label selector, a transform, typed listers for
// ConfigMaps and Deployments, and a handler. newFactory is its constructor line, the only line
// a migration to rewatch changes. It returns what its listers and handler saw once the server's
// writes have reached it.
func program(t *testing.T, cs kubernetes.Interface, ns string, newFactory func(kubernetes.Interface, time.Duration, ...informers.SharedInformerOption) informers.SharedInformerFactory) (listed, indexed []string, deployments int, transformed bool, adds map[string]bool) {
	factory := newFactory(cs, 0,
		informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=mine" }),
		informers.WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.Object); ok {
				m.SetManagedFields(nil)
				m.SetAnnotations(map[string]string{"transformed": "true"})
			}
			return obj, nil
		}))
	cms := factory.Core().V1().ConfigMaps()
	deps := factory.Apps().V1().Deployments().Lister()
	var mu sync.Mutex
	adds = map[string]bool{}
	_, err := cms.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		adds[obj.(*corev1.ConfigMap).Name] = true
	}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		require.True(t, ok, "%v never synced", typ)
	}
	// The last write selected: once the lister has it, it has every earlier one.
	require.Eventually(t, func() bool { _, err := cms.Lister().ConfigMaps(ns).Get("selected-last"); return err == nil }, time.Minute, 10*time.Millisecond)
	all, err := cms.Lister().List(labels.Everything())
	require.NoError(t, err)
	for _, cm := range all {
		listed = append(listed, cm.Namespace+"/"+cm.Name)
		transformed = cm.Annotations["transformed"] == "true"
	}
	inNs, err := cms.Lister().ConfigMaps(ns).List(labels.Everything())
	require.NoError(t, err)
	for _, cm := range inNs {
		indexed = append(indexed, cm.Name)
	}
	sort.Strings(listed)
	sort.Strings(indexed)
	require.Contains(t, cms.Informer().GetIndexer().GetIndexers(), cache.NamespaceIndex, "the lister's namespace index")
	d, err := deps.Deployments(ns).List(labels.Everything())
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	return listed, indexed, len(d), transformed, maps.Clone(adds)
}

// A program written against client-go's SharedInformerFactory runs unchanged but for its
// constructor line on rewatch's factory, against the real kube-apiserver, and sees what it sees
// on client-go's: only its namespace, only what its label selector selects, its transform
// applied, and a lister whose namespace index exists (client-go's typed informers always carry
// it; without it Lister().ConfigMaps(ns).List logs "Index with name namespace does not exist"
// and scans the whole cache).
func TestFactoryProgramRunsUnchanged(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	cs := direct(t, b)
	ns, other := namespace(t, b, "program"), namespace(t, b, "program-other")
	for _, where := range []string{ns, other} {
		for _, name := range []string{"selected-a", "selected-b", "unselected"} {
			lbl := map[string]string{"app": "mine"}
			if name == "unselected" {
				lbl = map[string]string{"app": "theirs"}
			}
			_, err := cs.CoreV1().ConfigMaps(where).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl}}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	_, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "selected-last", Labels: map[string]string{"app": "mine"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	clientGo := func(c kubernetes.Interface, d time.Duration, o ...informers.SharedInformerOption) informers.SharedInformerFactory {
		return informers.NewSharedInformerFactoryWithOptions(c, d, o...)
	}
	ours := func(c kubernetes.Interface, d time.Duration, o ...informers.SharedInformerOption) informers.SharedInformerFactory {
		f := factory.NewSharedInformerFactoryWithOptions(c, d, o...)
		require.IsType(t, &informer.Informer{}, f.InformerFor(&corev1.ConfigMap{}, nil), "the factory's informers are rewatch's")
		return f
	}
	want := []string{ns + "/selected-a", ns + "/selected-b", ns + "/selected-last"}
	for name, newFactory := range map[string]func(kubernetes.Interface, time.Duration, ...informers.SharedInformerOption) informers.SharedInformerFactory{"client-go": clientGo, "rewatch": ours} {
		listed, indexed, deployments, transformed, adds := program(t, cs, ns, newFactory)
		require.Equal(t, want, listed, name)
		require.Equal(t, []string{"selected-a", "selected-b", "selected-last"}, indexed, name)
		require.Zero(t, deployments, name)
		require.True(t, transformed, name)
		require.Equal(t, map[string]bool{"selected-a": true, "selected-b": true, "selected-last": true}, adds, name)
	}
}

package controllers

import (
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/persist"
)

// pathObjects is how many ConfigMaps the restarts through the other ways in keep: enough for a
// LIST of everything to stand out from the events of a resume, few enough to keep CI short.
const pathObjects = 300

// docs/semantics.md, "Persisted cache", through the dynamic factory (unstructured objects,
// kept as CBOR) and the metadata factory (PartialObjectMetadata): a restart after a change made
// while down resumes from the snapshot, with no LIST of everything, and the cache is the
// server's state the moment HasSynced is true.
func TestResourceFactoryRestartResumesFromItsPersistedCache(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	cs := direct(t, b)
	for _, kind := range []string{"dynamic", "metadata"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, b, "restart-"+kind)
			fillConfigMaps(t, cs, ns, pathObjects)
			opts := informer.Options{Persist: persist.Dir(t.TempDir()), Logger: slog.New(slog.DiscardHandler)}
			p, cfg := proxied(t, b)
			logRequestsOnFailure(t, kind, p)
			c := startController(t, kind, cfg, ns, opts)
			c.waitSynced(t)
			c.shutdown()
			changeWhileDown(t, cs, ns, pathObjects, 5, "down")
			want := serverVersions(t, cs, ns)
			p.Reset()

			c = startController(t, kind, cfg, ns, opts)
			c.waitSynced(t)
			require.Equal(t, want, c.atSync, "the cache at HasSynced is not the server's state")
			require.Zero(t, fullStateTransfers(p), "the restart transferred the whole state")
			require.Equal(t, 1, limitOneReads(p))
			require.Equal(t, rewatch.StartResumed, c.stats().Way, "%s", c.stats())
		})
	}
}

// crManager is a controller-runtime manager whose cache is built with informer.ForRESTConfig
// and opts, caching ConfigMaps in ns (those that match sel, if not nil), and the informer its
// cache built for them.
type crManager struct {
	manager.Manager
	mu  sync.Mutex
	inf *informer.Informer
}

func newCRManager(t *testing.T, cfg *rest.Config, ns string, sel labels.Selector, opts informer.Options) *crManager {
	t.Helper()
	rcfg, newInformer, err := informer.ForRESTConfig(cfg, nil, opts)
	require.NoError(t, err)
	m := &crManager{}
	m.Manager, err = ctrl.NewManager(rcfg, manager.Options{
		Cache: crcache.Options{
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				inf := newInformer(lw, obj, resync, idx)
				m.mu.Lock()
				m.inf, _ = inf.(*informer.Informer)
				m.mu.Unlock()
				return inf
			},
			DefaultNamespaces: map[string]crcache.Config{ns: {}},
			ByObject:          map[client.Object]crcache.ByObject{&corev1.ConfigMap{}: {Label: sel}},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	_, err = m.GetCache().GetInformer(t.Context(), &corev1.ConfigMap{})
	require.NoError(t, err)
	return m
}

// cached is key → resourceVersion of the ConfigMaps in the manager's cache.
func (m *crManager) cached(t *testing.T) map[string]string {
	t.Helper()
	var l corev1.ConfigMapList
	require.NoError(t, m.GetCache().List(t.Context(), &l))
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

func (m *crManager) start(t *testing.T) rewatch.Start {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	require.NotNil(t, m.inf, "the cache's ConfigMap informer is not rewatch's over its HTTP transport")
	return m.inf.Stats().Start
}

// docs/semantics.md, "Persisted cache", through controller-runtime (README, "A restart without a
// LIST"): a manager whose cache is built with ForRESTConfig and Options.Persist, stopped and
// started again after a change made while it was down, makes no LIST of everything, and its
// cache is the server's state once WaitForCacheSync returns. The snapshot's identity is the
// informer's namespace and selectors as controller-runtime asks for them: a manager with
// another ByObject label selector, on the same directory, does not load the first's snapshot
// (nor refuse it: it is another file) and lists what its selector matches.
func TestControllerRuntimeRestartResumesFromItsPersistedCache(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	ns := namespace(t, b, "crrestart")
	cs := direct(t, b)
	fillConfigMaps(t, cs, ns, pathObjects)
	for _, name := range []string{"other-1", "other-2"} {
		createConfigMap(t, cs, ns, name, map[string]string{"app": "other"})
	}
	dir := t.TempDir()
	logs := &syncBuffer{}
	opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.NewTextHandler(logs, nil))}
	p, cfg := proxied(t, b)
	logRequestsOnFailure(t, "controller-runtime", p)

	newCRManager(t, cfg, ns, nil, opts).run(t)()
	changeWhileDown(t, cs, ns, pathObjects, 5, "down")
	want := serverVersions(t, cs, ns)
	p.Reset()

	m := newCRManager(t, cfg, ns, nil, opts)
	stop := m.run(t)
	require.Equal(t, want, m.cached(t), "the cache at WaitForCacheSync is not the server's state")
	require.Zero(t, fullStateTransfers(p), "the restart transferred the whole state")
	require.Equal(t, 1, limitOneReads(p))
	require.Equal(t, rewatch.StartResumed, m.start(t).Way, "%s", m.start(t))
	stop()

	p.Reset()
	other := newCRManager(t, cfg, ns, labels.SelectorFromSet(labels.Set{"app": "other"}), opts)
	stop = other.run(t)
	require.Equal(t, map[string]string{ns + "/other-1": want[ns+"/other-1"], ns + "/other-2": want[ns+"/other-2"]}, other.cached(t))
	require.Equal(t, 1, fullStateTransfers(p), "another selector: its own LIST")
	require.Zero(t, limitOneReads(p), "another selector: no snapshot to resume from")
	require.Equal(t, rewatch.StartListed, other.start(t).Way, "%s", other.start(t))
	stop()
	require.NotContains(t, logs.String(), "refused")
	files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	require.NoError(t, err)
	require.Len(t, files, 2, "one snapshot per identity")
}

// run starts the manager and waits for its cache to sync; it returns what stops it.
func (m *crManager) run(t *testing.T) (stop func()) {
	t.Helper()
	return startManager(t, m.Manager)
}

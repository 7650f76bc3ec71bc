package controllers

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	"github.com/rewatch/rewatch/internal/syncbuf"
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
			opts.Policy.PageSize = pathObjects / 3 // more objects than the probe's page: the start resumes
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
// and opts, caching in ns ConfigMaps (those that match sel, if not nil), typed, metadata-only and
// unstructured, and Secrets, and the informers its cache built, by the type of their example object. The
// Secrets' informer is made by a second ForRESTConfig without Persist, as README says to keep a
// type off disk.
type crManager struct {
	manager.Manager
	mu   sync.Mutex
	infs map[string]*informer.Informer
}

// unstructuredConfigMap is the example of an unstructured ConfigMap informer.
func unstructuredConfigMap() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	return u
}

// metadataConfigMap is the example of a metadata-only ConfigMap informer.
func metadataConfigMap() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
}

func newCRManager(t *testing.T, cfg *rest.Config, ns string, sel labels.Selector, opts informer.Options) *crManager {
	t.Helper()
	rcfg, persisted, err := informer.ForRESTConfig(cfg, nil, opts)
	require.NoError(t, err)
	plainOpts := opts
	plainOpts.Persist = nil
	_, plain, err := informer.ForRESTConfig(cfg, nil, plainOpts)
	require.NoError(t, err)
	m := &crManager{infs: map[string]*informer.Informer{}}
	m.Manager, err = ctrl.NewManager(rcfg, manager.Options{
		Cache: crcache.Options{
			NewInformer: func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
				newInformer := persisted
				if _, secret := obj.(*corev1.Secret); secret {
					newInformer = plain
				}
				inf := newInformer(lw, obj, resync, idx)
				m.mu.Lock()
				m.infs[fmt.Sprintf("%T", obj)], _ = inf.(*informer.Informer)
				m.mu.Unlock()
				return inf
			},
			DefaultNamespaces: map[string]crcache.Config{ns: {}},
			ByObject: map[client.Object]crcache.ByObject{
				&corev1.ConfigMap{}:     {Label: sel},
				metadataConfigMap():     {Label: sel},
				unstructuredConfigMap(): {Label: sel},
			},
		},
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 logr.Discard(),
	})
	require.NoError(t, err)
	for _, obj := range []client.Object{&corev1.ConfigMap{}, metadataConfigMap(), unstructuredConfigMap(), &corev1.Secret{}} {
		_, err = m.GetCache().GetInformer(t.Context(), obj)
		require.NoError(t, err)
	}
	return m
}

// cached is key → resourceVersion of the ConfigMaps in the manager's cache, typed,
// metadata-only and unstructured.
func (m *crManager) cached(t *testing.T) (typed, metadataOnly, unstruct map[string]string) {
	t.Helper()
	var l corev1.ConfigMapList
	require.NoError(t, m.GetCache().List(t.Context(), &l))
	typed = map[string]string{}
	for _, cm := range l.Items {
		typed[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	ml := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}
	require.NoError(t, m.GetCache().List(t.Context(), ml))
	metadataOnly = map[string]string{}
	for _, cm := range ml.Items {
		metadataOnly[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	ul := &unstructured.UnstructuredList{}
	ul.SetAPIVersion("v1")
	ul.SetKind("ConfigMapList")
	require.NoError(t, m.GetCache().List(t.Context(), ul))
	unstruct = map[string]string{}
	for _, cm := range ul.Items {
		unstruct[cm.GetNamespace()+"/"+cm.GetName()] = cm.GetResourceVersion()
	}
	return typed, metadataOnly, unstruct
}

// ways is how each of the manager's informers started, by the type of its example object.
func (m *crManager) ways(t *testing.T) map[string]rewatch.StartWay {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]rewatch.StartWay{}
	for typ, inf := range m.infs {
		require.NotNil(t, inf, "the cache's %s informer is not rewatch's over its HTTP transport", typ)
		out[typ] = inf.Stats().Start.Way
	}
	return out
}

// run starts the manager and waits for its cache to sync; it returns what stops it.
func (m *crManager) run(t *testing.T) (stop func()) {
	t.Helper()
	return startManager(t, m.Manager)
}

// docs/semantics.md, "Persisted cache", through controller-runtime (README, "A restart without a
// LIST"): a manager whose cache is built with ForRESTConfig and Options.Persist, stopped and
// started again after a change made while it was down, makes no LIST of everything, and its
// cache — typed, metadata-only and unstructured ConfigMaps — is the server's state once WaitForCacheSync
// returns; Secrets, routed to a ForRESTConfig without Persist, never reach the directory. The
// snapshot's identity is the informer's namespace and selectors as controller-runtime asks for
// them: a manager with another ByObject label selector, on the same directory, does not load the
// first's snapshot (nor refuse it: it is another file) and lists what its selector matches.
func TestControllerRuntimeRestartResumesFromItsPersistedCache(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	ns := namespace(t, b, "crrestart")
	cs := direct(t, b)
	fillConfigMaps(t, cs, ns, pathObjects)
	for _, name := range []string{"other-1", "other-2"} {
		createConfigMap(t, cs, ns, name, map[string]string{"app": "other"})
	}
	createSecret(t, cs, ns, "keep")
	dir := t.TempDir()
	logs := &syncbuf.Buffer{}
	opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.NewTextHandler(logs, nil))}
	opts.Policy.PageSize = pathObjects / 3 // more objects than the probe's page: the start resumes
	p, cfg := proxied(t, b)
	logRequestsOnFailure(t, "controller-runtime", p)
	snapshots := func() []string {
		files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
		require.NoError(t, err)
		for i, f := range files {
			files[i] = strings.SplitN(filepath.Base(f), ".", 2)[0]
		}
		return files
	}
	const typedCM, metaCM, unCM, secret = "*v1.ConfigMap", "*v1.PartialObjectMetadata", "*unstructured.Unstructured", "*v1.Secret"

	newCRManager(t, cfg, ns, nil, opts).run(t)()
	require.Equal(t, []string{"configmaps", "configmaps", "configmaps"}, snapshots(), "a snapshot per ConfigMap informer, none of Secrets")
	changeWhileDown(t, cs, ns, pathObjects, 5, "down")
	want := serverVersions(t, cs, ns)
	p.Reset()

	m := newCRManager(t, cfg, ns, nil, opts)
	stop := m.run(t)
	typed, metadataOnly, unstruct := m.cached(t)
	require.Equal(t, want, typed, "the cache at WaitForCacheSync is not the server's state")
	require.Equal(t, want, metadataOnly, "the metadata-only cache at WaitForCacheSync is not the server's state")
	require.Equal(t, want, unstruct, "the unstructured cache at WaitForCacheSync is not the server's state")
	require.Zero(t, fullStateTransfers(p), "the restart transferred the whole state")
	require.Equal(t, 3, limitOneReads(p), "one consistent read per ConfigMap informer")
	require.Equal(t, map[string]rewatch.StartWay{typedCM: rewatch.StartResumed, metaCM: rewatch.StartResumed, unCM: rewatch.StartResumed, secret: rewatch.StartListed}, m.ways(t))
	stop()

	p.Reset()
	other := newCRManager(t, cfg, ns, labels.SelectorFromSet(labels.Set{"app": "other"}), opts)
	stop = other.run(t)
	selected := map[string]string{ns + "/other-1": want[ns+"/other-1"], ns + "/other-2": want[ns+"/other-2"]}
	typed, metadataOnly, unstruct = other.cached(t)
	require.Equal(t, selected, typed)
	require.Equal(t, selected, metadataOnly)
	require.Equal(t, selected, unstruct)
	require.Equal(t, 3, fullStateTransfers(p), "another selector: a LIST per ConfigMap informer")
	require.Zero(t, limitOneReads(p), "another selector: no snapshot to resume from")
	require.Equal(t, map[string]rewatch.StartWay{typedCM: rewatch.StartListed, metaCM: rewatch.StartListed, unCM: rewatch.StartListed, secret: rewatch.StartListed}, other.ways(t))
	stop()
	require.NotContains(t, logs.String(), "refused")
	require.Len(t, snapshots(), 6, "a snapshot per identity")
}

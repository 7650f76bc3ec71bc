package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/informer/factory"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// restartObjects is how many ~1 KiB ConfigMaps the restart tests keep: the benchmark's 20,000
// (rewatch-bench restart) cut to what keeps CI short.
const restartObjects = 2000

var (
	configMapType = reflect.TypeOf(&corev1.ConfigMap{})
	configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// fillConfigMaps creates cm-0 … cm-<n-1> of ~1 KiB in ns, 16 at a time.
func fillConfigMaps(t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	payload := strings.Repeat("x", 1000)
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: ns}, Data: map[string]string{"payload": payload}}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// changeWhileDown changes what a controller that is down misses: n updates spread over the
// objects, one delete and one create. It returns how many objects changed.
func changeWhileDown(t *testing.T, cs kubernetes.Interface, ns string, objects, n int, tag string) int {
	t.Helper()
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps(ns)
	for k := range n {
		name := fmt.Sprintf("cm-%d", 1+k*(objects-2)/n)
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data["v"] = tag
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, cms.Delete(ctx, "cm-0", metav1.DeleteOptions{}))
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new-" + tag, Namespace: ns}, Data: map[string]string{"v": tag}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return n + 2
}

// restartedController is one run of a controller: the ConfigMap informer of a SharedInformerFactory —
// rewatch's with opts ("rewatch"; "dynamic" and "metadata" for its dynamic and metadata
// factories), or client-go's — through a rest.Config, with a handler that records
// what it hears.
type restartedController struct {
	kind   string
	inf    cache.SharedIndexInformer
	stats  func() rewatch.Start
	heard  *seen
	synced cache.InformerSynced
	cancel context.CancelFunc
	stop   func()
	// atSync is the informer's cache (key → resourceVersion) the moment HasSynced was first
	// seen true.
	atSync map[string]string
}

func startController(t *testing.T, kind string, cfg *rest.Config, ns string, opts informer.Options) *restartedController {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	c := &restartedController{kind: kind, heard: &seen{}, cancel: cancel}
	switch kind {
	case "rewatch":
		f := factory.New(cs, 0, opts, informers.WithNamespace(ns))
		c.inf = f.Core().V1().ConfigMaps().Informer()
		c.stats = func() rewatch.Start { return f.Stats()[configMapType].Start }
		f.Start(ctx.Done())
		c.stop = f.Shutdown
	case "dynamic", "metadata":
		// The dynamic factory's informers decode unstructured objects, the metadata
		// factory's PartialObjectMetadata: each keeps its snapshot in its own codec.
		f, err := factory.NewResourceFactory(cfg, kind == "metadata", 0, ns, nil, opts)
		require.NoError(t, err)
		c.inf = f.ForResource(configMapsGVR).Informer()
		c.stats = func() rewatch.Start { return f.Stats()[configMapsGVR].Start }
		f.Start(ctx.Done())
		c.stop = f.Shutdown
	default:
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
		c.inf = f.Core().V1().ConfigMaps().Informer()
		f.Start(ctx.Done())
		c.stop = f.Shutdown
	}
	reg, err := c.inf.AddEventHandler(c.heard.handler())
	require.NoError(t, err)
	c.synced = reg.HasSynced
	t.Cleanup(c.shutdown)
	return c
}

// waitSynced polls HasSynced every millisecond and keeps the cache as it was when it turned
// true: what a controller would act on.
func (c *restartedController) waitSynced(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !c.inf.HasSynced() {
		require.True(t, time.Now().Before(deadline), "%s never synced", c.kind)
		time.Sleep(time.Millisecond)
	}
	c.atSync = cacheVersions(c.inf.GetStore())
	require.True(t, cache.WaitForCacheSync(nil, c.synced), "%s: the handler's registration never synced", c.kind)
}

// shutdown stops the controller and waits until its informers have returned (a persisted
// cache is saved then).
func (c *restartedController) shutdown() {
	if c.cancel == nil {
		return
	}
	c.cancel()
	c.cancel = nil
	c.stop()
}

func cacheVersions(s cache.Store) map[string]string {
	out := map[string]string{}
	for _, o := range s.List() {
		m := o.(metav1.Object)
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// serverVersions is key → resourceVersion of every configmap in ns, read without the proxy.
func serverVersions(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out
}

// limitOneReads counts the consistent LISTs of one item, the probe a resume makes first.
func limitOneReads(p *faultproxy.Proxy) int {
	n := 0
	for _, r := range p.Requests() {
		if r.Kind == faultproxy.List && r.Query.Get("limit") == "1" && r.Query.Get("resourceVersionMatch") != "Exact" {
			n++
		}
	}
	return n
}

// verifications counts the LISTs of one item at the snapshot's resourceVersion (Exact) that
// prove its history when the probe's item changed after it (docs/semantics.md, "Persisted
// cache").
func verifications(p *faultproxy.Proxy) int {
	n := 0
	for _, r := range p.Requests() {
		if r.Kind == faultproxy.List && r.Query.Get("limit") == "1" && r.Query.Get("resourceVersionMatch") == "Exact" {
			n++
		}
	}
	return n
}

// docs/semantics.md, "Persisted cache", through the informers a controller uses: a controller
// restarted after a while down, with rewatch's SharedInformerFactory keeping its cache in a
// directory, makes no LIST of everything — one limit=1 read, then a watch from the snapshot's
// resourceVersion — and its cache is the server's state the moment HasSynced is true; its
// handler hears the snapshot's objects as adds and then only what changed. client-go's
// SharedInformerFactory, beside it on the same server and writes, transfers the whole state.
func TestControllerRestartResumesFromItsPersistedCache(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	ns := namespace(t, b, "restart")
	cs := direct(t, b)
	fillConfigMaps(t, cs, ns, restartObjects)
	dir := t.TempDir()
	logs := &syncbuf.Buffer{}
	opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.NewTextHandler(logs, nil))}
	rp, rcfg := proxied(t, b)
	cp, ccfg := proxied(t, b)
	logRequestsOnFailure(t, "rewatch", rp)
	logRequestsOnFailure(t, "client-go", cp)

	first := []*restartedController{startController(t, "rewatch", rcfg, ns, opts), startController(t, "client-go", ccfg, ns, informer.Options{})}
	for _, c := range first {
		c.waitSynced(t)
		c.shutdown()
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
	require.NoError(t, err)
	require.Len(t, files, 1, "one snapshot, written as the informer stopped")
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the snapshot holds the objects: owner-only")

	changed := changeWhileDown(t, cs, ns, restartObjects, restartObjects/100, "down")
	want := serverVersions(t, cs, ns)
	rp.Reset()
	cp.Reset()

	rw := startController(t, "rewatch", rcfg, ns, opts)
	cg := startController(t, "client-go", ccfg, ns, informer.Options{})
	rw.waitSynced(t)
	cg.waitSynced(t)
	t.Logf("restart of %d configmaps, %d changed while down: full-state transfers rewatch %d (limit=1 reads %d, start: %s), client-go %d",
		restartObjects, changed, fullStateTransfers(rp), limitOneReads(rp), rw.stats(), fullStateTransfers(cp))

	require.Equal(t, want, rw.atSync, "rewatch's cache at HasSynced is not the server's state")
	require.Zero(t, fullStateTransfers(rp), "rewatch's restart transferred the whole state")
	require.Equal(t, 1, limitOneReads(rp), "one consistent limit=1 read")
	// cm-0 was deleted and cm-1 changed while down: the probe's item, cm-1, says nothing of the
	// snapshot's history, and cm-0 as it was at the snapshot's resourceVersion does.
	require.Equal(t, 1, verifications(rp), "one limit=1 read at the snapshot's resourceVersion")
	require.Equal(t, rewatch.StartResumed, rw.stats().Way, "%s", rw.stats())
	require.Equal(t, 1, fullStateTransfers(cp), "client-go's restart (the baseline) is one LIST or watch-list of everything")
	require.Equal(t, want, cg.atSync)

	// The handler heard the snapshot as adds, then the changes.
	states, replays, err := rw.heard.states()
	require.NoError(t, err)
	require.Zero(t, replays)
	for key, rv := range want {
		s := states[key]
		require.NotEmpty(t, s, key)
		require.Equal(t, rv, fmt.Sprint(s[len(s)-1]), key)
	}
	require.NotContains(t, cacheVersions(rw.inf.GetStore()), ns+"/cm-0", "the object deleted while down is gone")
	require.NotContains(t, logs.String(), "refused")
}

// docs/semantics.md, "Persisted cache": a restart after the server's history moved past the
// snapshot (here the resume watch is answered 410, as after a compaction) costs one LIST, at
// the snapshot's resourceVersion, and decodes only the items that changed.
func TestControllerRestartAfterHistoryMovedPastDecodesOnlyChanges(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	ns := namespace(t, b, "expired")
	cs := direct(t, b)
	fillConfigMaps(t, cs, ns, restartObjects)
	dir := t.TempDir()
	opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.DiscardHandler)}
	p, cfg := proxied(t, b)
	logRequestsOnFailure(t, "rewatch", p)

	c := startController(t, "rewatch", cfg, ns, opts)
	c.waitSynced(t)
	c.shutdown()
	changed := changeWhileDown(t, cs, ns, restartObjects, restartObjects/20-2, "expired") // 5%
	want := serverVersions(t, cs, ns)
	p.Reset()
	expired := p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, PathContains: "/configmaps", Times: 1, Fault: faultproxy.Respond(faultproxy.Expired())})

	c = startController(t, "rewatch", cfg, ns, opts)
	c.waitSynced(t)
	start := c.stats()
	t.Logf("restart after the history moved past: %d of %d changed; full-state transfers %d; start: %s", changed, restartObjects, fullStateTransfers(p), start)
	require.Equal(t, 1, expired.Fired())
	require.Equal(t, 1, fullStateTransfers(p), "one LIST")
	require.Equal(t, want, c.atSync)
	require.Equal(t, rewatch.StartRelisted, start.Way, "%s", start)
	require.Equal(t, len(want), start.Listed)
	require.LessOrEqual(t, start.Decoded, changed, "the relist decoded items the snapshot held unchanged: %s", start)
}

// snapshotFault spoils the snapshot in dir before a restart.
type snapshotFault struct {
	name string
	// spoil changes the snapshot; it gets the transport of the informer that wrote it.
	spoil func(t *testing.T, dir string, tr *httpapi.Transport, ns string)
	// reason is a word the refusal's log line must say.
	reason string
}

// docs/semantics.md, "Persisted cache": a snapshot that is not this informer's — another
// namespace, selector or resource, another server — or that is corrupted, truncated, or
// written at a resourceVersion ahead of the server's (a restored etcd) is never restored: the
// restart logs why and lists everything, and what HasSynced reports is the server's state.
func TestControllerRestartRefusesASnapshotNotItsOwn(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	cs := direct(t, b)
	snapshotFile := func(t *testing.T, dir string) string {
		files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
		require.NoError(t, err)
		require.Len(t, files, 1)
		return files[0]
	}
	// asIf rewrites the informer's snapshot, where the informer will look for it, as written
	// for another identity.
	asIf := func(t *testing.T, dir string, tr *httpapi.Transport, other func(*persist.Identity)) {
		codec, err := tr.SnapshotCodec()
		require.NoError(t, err)
		st, own := persist.Dir(dir), tr.SnapshotIdentity()
		snap, err := persist.Load(context.Background(), st, own, codec)
		require.NoError(t, err)
		id := own
		other(&id)
		_, err = persist.Save(context.Background(), st, id, codec, snap.ResourceVersion, snap.Items, time.Now())
		require.NoError(t, err)
		require.NoError(t, os.Rename(filepath.Join(dir, persist.FileName(id)), filepath.Join(dir, persist.FileName(own))))
	}
	faults := []snapshotFault{
		{"another namespace", func(t *testing.T, dir string, tr *httpapi.Transport, ns string) {
			asIf(t, dir, tr, func(id *persist.Identity) { id.Namespace = ns + "-other" })
		}, "namespace"},
		{"another selector", func(t *testing.T, dir string, tr *httpapi.Transport, _ string) {
			asIf(t, dir, tr, func(id *persist.Identity) { id.LabelSelector = "app=other" })
		}, "labelSelector"},
		{"another resource", func(t *testing.T, dir string, tr *httpapi.Transport, _ string) {
			asIf(t, dir, tr, func(id *persist.Identity) { id.Resource = "secrets" })
		}, "resource"},
		{"another server", func(t *testing.T, dir string, tr *httpapi.Transport, _ string) {
			asIf(t, dir, tr, func(id *persist.Identity) { id.Server = "https://elsewhere.example:6443" })
		}, "server"},
		{"corrupted", func(t *testing.T, dir string, _ *httpapi.Transport, _ string) {
			f := snapshotFile(t, dir)
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			raw[len(raw)*2/3] ^= 0x5a
			require.NoError(t, os.WriteFile(f, raw, 0o600))
		}, "corrupted"},
		{"truncated", func(t *testing.T, dir string, _ *httpapi.Transport, _ string) {
			f := snapshotFile(t, dir)
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, raw[:len(raw)/2], 0o600))
		}, "truncated"},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t, b, "refuse")
			fillConfigMaps(t, cs, ns, 50)
			dir := t.TempDir()
			logs := &syncbuf.Buffer{}
			opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.NewTextHandler(logs, nil))}
			p, cfg := proxied(t, b)
			c := startController(t, "rewatch", cfg, ns, opts)
			c.waitSynced(t)
			c.shutdown()
			fault.spoil(t, dir, httpTransport(t, cfg, ns), ns)
			changeWhileDown(t, cs, ns, 50, 3, "spoiled")
			want := serverVersions(t, cs, ns)
			p.Reset()

			c = startController(t, "rewatch", cfg, ns, opts)
			c.waitSynced(t)
			require.Equal(t, want, c.atSync, "HasSynced on a state that is not the server's")
			require.Equal(t, 1, fullStateTransfers(p), "a refused snapshot: one plain LIST")
			require.Zero(t, limitOneReads(p), "nothing to resume, nothing to probe")
			require.Contains(t, logs.String(), "refused")
			require.Contains(t, logs.String(), fault.reason)
			require.Equal(t, rewatch.StartRefused, c.stats().Way, "%s", c.stats())
		})
	}
}

// httpTransport is the HTTP transport an informer of the factory builds for ConfigMaps in ns.
func httpTransport(t *testing.T, cfg *rest.Config, ns string) *httpapi.Transport {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	conn, err := informer.ClientsetConfig(cs, &corev1.ConfigMap{}, ns, nil)
	require.NoError(t, err)
	tr, err := httpapi.New(conn)
	require.NoError(t, err)
	return tr
}

// docs/semantics.md, "Persisted cache": a snapshot written at a resourceVersion ahead of the
// server's (an etcd restored from a backup) is dropped after the consistent read says so: the
// start lists everything, and an object only the snapshot held is never in the cache, nor
// heard by a handler, nor reported as synced.
func TestControllerRestartDropsASnapshotAheadOfTheServer(t *testing.T) {
	t.Parallel()
	b := shared.Get(t)
	cs := direct(t, b)
	ns := namespace(t, b, "ahead")
	fillConfigMaps(t, cs, ns, 50)
	dir := t.TempDir()
	p, cfg := proxied(t, b)
	// Pages of ten: the 50 objects are more than the probe's page, whose answer is then the
	// consistent read the snapshot is measured against, not the state itself.
	opts := informer.Options{Persist: persist.Dir(dir), Logger: slog.New(slog.DiscardHandler)}
	opts.Policy.PageSize = 10
	c := startController(t, "rewatch", cfg, ns, opts)
	c.waitSynced(t)
	c.shutdown()

	// The snapshot again, with a ghost object and a resourceVersion far ahead of the server's.
	tr := httpTransport(t, cfg, ns)
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	st := persist.Dir(dir)
	snap, err := persist.Load(context.Background(), st, tr.SnapshotIdentity(), codec)
	require.NoError(t, err)
	ghost := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: ns, ResourceVersion: "999999999990"}}
	_, err = persist.Save(context.Background(), st, tr.SnapshotIdentity(), codec, "999999999999", append(snap.Items, ghost), time.Now())
	require.NoError(t, err)
	want := serverVersions(t, cs, ns)
	p.Reset()

	c = startController(t, "rewatch", cfg, ns, opts)
	c.waitSynced(t)
	require.Equal(t, want, c.atSync)
	require.NotContains(t, c.atSync, ns+"/ghost")
	states, _, err := c.heard.states()
	require.NoError(t, err)
	require.NotContains(t, states, ns+"/ghost", "a handler heard of an object only the snapshot held")
	require.Equal(t, 1, limitOneReads(p), "the consistent read that showed the snapshot ahead")
	require.Equal(t, rewatch.StartSnapshotAhead, c.stats().Way, "%s", c.stats())
	require.Equal(t, 1, fullStateTransfers(p), "then one plain LIST")
}

package informer_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/persist"
)

// jsonCodec keeps ConfigMaps as JSON: the fake transport's snapshot codec.
type jsonCodec struct{}

func (jsonCodec) MediaType() string              { return "application/json" }
func (jsonCodec) Encode(obj any) ([]byte, error) { return json.Marshal(obj) }
func (jsonCodec) Decode(raw []byte) (any, error) {
	var cm corev1.ConfigMap
	return &cm, json.Unmarshal(raw, &cm)
}

// snapshottingTransport is the fake transport with what a persisted cache needs of a
// transport, as rewatch's HTTP transport has it.
type snapshottingTransport struct{ *fakeTransport }

var fakeIdentity = persist.Identity{Server: "http://fake", Version: "v1", Resource: "configmaps", Decoder: "json"}

func (snapshottingTransport) SnapshotCodec() (persist.Codec, error) { return jsonCodec{}, nil }
func (snapshottingTransport) SnapshotIdentity() persist.Identity    { return fakeIdentity }

// docs/semantics.md, "Handlers" and "Persisted cache": an informer started with a persisted
// snapshot holds its objects at once and its handler hears them as adds of the initial list,
// but neither HasSynced nor the registration's is true until the watch resumed from the
// snapshot reaches the consistent read taken at start (the probe's resourceVersion, 20); the
// change the watch brings then is an add outside the initial list. At stop the cache is saved,
// at the resourceVersion it reached.
func TestPersistedCacheIsRestoredAndSyncedOnlyOnceCaughtUp(t *testing.T) {
	dir := t.TempDir()
	st := persist.Dir(dir)
	_, err := persist.Save(context.Background(), st, fakeIdentity, jsonCodec{}, "10", []any{cm("a", "1"), cm("b", "2")}, time.Now())
	require.NoError(t, err)
	gate := make(chan struct{})
	ft := &fakeTransport{
		// The probe: a consistent read at 20, with more to come; a@1, unchanged since the
		// snapshot, witnesses its history.
		lists:   []page{{rv: "20", cont: "c1", items: []any{cm("a", "1")}}},
		watches: [][]step{{{gate: gate}, added(cm("c", "20"))}},
	}
	inf := informer.New(snapshottingTransport{ft}, &corev1.ConfigMap{}, informer.Options{Logger: quiet.Logger, Persist: st, PersistPeriod: -1})
	var r recorder
	reg, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	stop := run(t, inf)

	require.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true"}, r.waitFor(t, 2))
	require.ElementsMatch(t, []string{"ns/a", "ns/b"}, inf.GetIndexer().ListKeys(), "a lister reads the restored objects")
	// The handlers hear the snapshot as soon as it is restored, before the probe answers.
	require.Eventually(t, func() bool { return inf.Stats().Start.Way == rewatch.StartResuming }, 10*time.Second, time.Millisecond,
		"the probe's page witnesses the snapshot's history and the watch resumes")
	require.False(t, inf.HasSynced(), "synced on the snapshot, before catching up")
	require.False(t, reg.HasSynced())

	close(gate)
	informer.SyncedWithin(t, inf.HasSynced, reg.HasSynced)
	require.Equal(t, []string{"add a@1 initial=true", "add b@2 initial=true", "add c@20 initial=false"}, r.waitFor(t, 3))
	require.Equal(t, rewatch.StartResumed, inf.Stats().Start.Way, "%s", inf.Stats().Start)
	stop()

	snap, err := persist.Load(context.Background(), st, fakeIdentity, jsonCodec{})
	require.NoError(t, err)
	require.Equal(t, "20", snap.ResourceVersion, "saved at stop")
	require.Len(t, snap.Items, 3)
}

// docs/semantics.md, "Persisted cache", the probe of a small collection: a probe's page that
// holds the whole collection is the informer's initial list — its handlers hear its objects as
// adds of the initial list, never the snapshot's (b, deleted while the informer was down, is
// never heard of) — and the informer is synced after that one request.
func TestASmallCollectionIsSyncedByTheProbe(t *testing.T) {
	st := persist.Dir(t.TempDir())
	_, err := persist.Save(context.Background(), st, fakeIdentity, jsonCodec{}, "10", []any{cm("a", "1"), cm("b", "2")}, time.Now())
	require.NoError(t, err)
	ft := &fakeTransport{
		lists:   []page{{rv: "20", items: []any{cm("a", "1"), cm("c", "15")}}}, // no continue: the whole collection
		watches: [][]step{{added(cm("d", "21"))}},
	}
	inf := informer.New(snapshottingTransport{ft}, &corev1.ConfigMap{}, informer.Options{Logger: quiet.Logger, Persist: st, PersistPeriod: -1})
	var r recorder
	reg, err := inf.AddEventHandler(&r)
	require.NoError(t, err)
	stop := run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced, reg.HasSynced)
	require.Equal(t, []string{"add a@1 initial=true", "add c@15 initial=true", "add d@21 initial=false"}, r.waitFor(t, 3))
	start := inf.Stats().Start
	require.Equal(t, rewatch.StartProbedWhole, start.Way, "%s", start)
	require.Equal(t, 1, inf.Stats().Lists, "one LIST: the probe")
	stop()
}

// docs/semantics.md, "Persisted cache": over a client-go ListerWatcher the informer cannot keep
// a snapshot (client-go decodes the objects): it says so in its log and lists as without one.
func TestPersistedCacheIsOffOverAListerWatcher(t *testing.T) {
	logs := &syncbuf.Buffer{}
	_, lw := source(t)
	dir := t.TempDir()
	inf := informer.WithOptions(informer.Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Persist: persist.Dir(dir)})(lw, &corev1.ConfigMap{}, 0, nil)
	stop := run(t, inf)
	informer.SyncedWithin(t, inf.HasSynced)
	stop()
	require.Contains(t, logs.String(), "persisted cache off")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "no snapshot written")
}

// docs/semantics.md "Persisted cache", "Identity": a snapshot holds transformed objects, so it
// names the transform — its function and the caller's TransformVersion — and a snapshot written
// by another transform, or another version of it, or without one, is not loaded. A transform
// without a declared version turns the persisted cache off, said at error level: nothing it
// could save says what it kept.
func TestASnapshotNamesItsTransform(t *testing.T) {
	strip := func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			c := cm.DeepCopy()
			c.Data = nil
			return c, nil
		}
		return obj, nil
	}
	dir := t.TempDir()
	st := persist.Dir(dir)
	runOnce := func(transform cache.TransformFunc, version string) (rewatch.Stats, string) {
		logs := &syncbuf.Buffer{}
		ft := &fakeTransport{
			lists:   []page{{rv: "20", items: []any{cm("a", "1"), cm("b", "2")}}},
			watches: [][]step{{}},
		}
		inf := informer.New(snapshottingTransport{ft}, &corev1.ConfigMap{}, informer.Options{
			Logger: slog.New(slog.NewTextHandler(logs, nil)), Persist: st, PersistPeriod: -1,
			Transform: transform, TransformVersion: version})
		stop := run(t, inf)
		informer.SyncedWithin(t, inf.HasSynced)
		stop()
		return inf.Stats(), logs.String()
	}
	snapshots := func() []string {
		files, err := filepath.Glob(filepath.Join(dir, "*.snap"))
		require.NoError(t, err)
		return files
	}

	_, logs := runOnce(strip, "")
	require.Contains(t, logs, "persisted cache off")
	require.Contains(t, logs, "level=ERROR")
	require.Contains(t, logs, "TransformVersion")
	require.Empty(t, snapshots(), "a transform without a version saves nothing")

	st1, _ := runOnce(strip, "keys-only/1")
	require.Equal(t, rewatch.StartListed, st1.Start.Way)
	require.Len(t, snapshots(), 1)
	again, _ := runOnce(strip, "keys-only/1")
	require.NotEqual(t, rewatch.StartListed, again.Start.Way, "the same transform and version load the snapshot: %s", again.Start)
	other, _ := runOnce(strip, "keys-only/2")
	require.Equal(t, rewatch.StartListed, other.Start.Way, "another version of the transform finds no snapshot of its own: %s", other.Start)
	none, _ := runOnce(nil, "")
	require.Equal(t, rewatch.StartListed, none.Start.Way, "without the transform: %s", none.Start)
	stripped, _ := runOnce(informer.StripManagedFields, "")
	require.Equal(t, rewatch.StartListed, stripped.Start.Way, "StripManagedFields has a version of its own: %s", stripped.Start)
	require.Len(t, snapshots(), 4, "a snapshot per transform and version, and one without")
}

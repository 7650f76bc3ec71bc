package objstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/persist/objstore"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// The persisted cache in a real bucket — SeaweedFS's S3 gateway, built by
// scripts/build-seaweedfs.sh — shared by replicas of a reflector on a real kube-apiserver,
// through every fault of docs/semantics.md, "In object storage". Run with REWATCH_E2E=1 (what
// scripts/test.sh sets); under CI=true a server that cannot start fails the test.

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

const bucketName = "rewatch"

// world is one kube-apiserver, one SeaweedFS with one bucket, and a namespace of ConfigMaps
// behind a pass-through proxy that counts the reflectors' requests.
type world struct {
	t     *testing.T
	rb    *testbackend.Real
	s3    *apiserver.SeaweedFS
	ns    string
	proxy *faultproxy.Proxy
	key   persist.Key
}

func newWorld(t *testing.T) *world {
	w := newBucketWorld(t)
	rb, err := testbackend.StartRealWithin(20*time.Minute, apiserver.Options{})
	if err != nil {
		testbackend.Unavailable(t, err)
	}
	t.Cleanup(rb.Server.Stop)
	w.rb = rb
	return w
}

// newBucketWorld is a world of SeaweedFS alone, for the tests of the store itself.
func newBucketWorld(t *testing.T) *world {
	s3 := apiserver.RequireSeaweedFS(t, apiserver.SeaweedOptions{Buckets: []string{bucketName}})
	return &world{t: t, s3: s3, key: newKey(t)}
}

// namespace makes a namespace of n ConfigMaps of about 1 KiB and a proxy to reach it.
func (w *world) namespace(name string, n int) {
	t := w.t
	w.ns = name
	require.NoError(t, w.rb.EnsureNamespace(t.Context(), name))
	for i := range n {
		require.NoError(t, w.rb.Put(t.Context(), configMaps, name, fmt.Sprintf("cm-%04d", i), strings.Repeat("v", 1000)))
	}
	if w.proxy != nil {
		return // one proxy, one address: the reflectors' identity (its server URL) stays
	}
	p, err := faultproxy.New(faultproxy.Config{Upstream: w.rb.URL(), Transport: w.rb.Transport()})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	w.proxy = p
}

func newKey(t testing.TB) persist.Key {
	var k persist.Key
	_, err := rand.Read(k[:])
	require.NoError(t, err)
	return k
}

func (w *world) options(prefix string, keys ...persist.Key) objstore.Options {
	return objstore.Options{Endpoint: w.s3.Endpoint(), Region: "us-east-1", Bucket: bucketName, Prefix: prefix, Keys: keys,
		Credentials: credentials.NewStaticV4(apiserver.SeaweedAccessKey, apiserver.SeaweedSecretKey, ""), FreshFor: -1}
}

func (w *world) store(prefix string, keys ...persist.Key) persist.Store {
	st, err := objstore.New(w.options(prefix, keys...))
	require.NoError(w.t, err)
	return st
}

// raw is an S3 client of the bucket, for what a test does behind the store's back.
func (w *world) raw() *minio.Core {
	c, err := minio.NewCore(strings.TrimPrefix(w.s3.Endpoint(), "http://"), &minio.Options{Region: "us-east-1",
		Creds: credentials.NewStaticV4(apiserver.SeaweedAccessKey, apiserver.SeaweedSecretKey, "")})
	require.NoError(w.t, err)
	return c
}

// replica is one reflector of a controller's Deployment: a new pod's, with an empty store.
type replica struct {
	t      *testing.T
	r      *rewatch.Reflector
	store  *driver.MemStore
	logs   *logRecorder
	conn   rewatch.Connection
	cancel context.CancelFunc
	done   chan error
}

// start runs a replica over st with pages of 100 (the collections here are larger, so that a
// start from a snapshot resumes rather than taking the probe's page as the state).
func (w *world) start(st persist.Store, mod func(*rewatch.Config)) *replica {
	t := w.t
	logs := &logRecorder{}
	cfg := rewatch.Config{
		Connection: rewatch.Connection{Client: &http.Client{}, Server: w.proxy.URL(),
			Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: w.ns}},
		Store: driver.NewMemStore(), Persist: st, Logger: slog.New(logs),
	}
	cfg.Policy.PageSize = 100
	if mod != nil {
		mod(&cfg)
	}
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	rep := &replica{t: t, r: r, store: cfg.Store.(*driver.MemStore), logs: logs, conn: cfg.Connection, cancel: cancel, done: make(chan error, 1)}
	go func() { rep.done <- r.Run(ctx) }()
	t.Cleanup(rep.stop)
	return rep
}

func (r *replica) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		require.NoError(r.t, err)
	case <-time.After(60 * time.Second):
		r.t.Fatal("the replica did not stop within 60 s")
	}
}

// synced waits until the replica says it is synced, and checks that its store then holds the
// server's state (names, resourceVersions, uids).
func (w *world) synced(r *replica) {
	t := w.t
	t.Helper()
	require.Eventually(t, r.r.HasSynced, 60*time.Second, 5*time.Millisecond, "never synced: %s", r.r.Stats().Start)
	require.Eventually(t, func() bool {
		return maps.Equal(storeObjects(r.store), w.serverObjects())
	}, 30*time.Second, 20*time.Millisecond, "the store never held the server's state")
}

func rvNumber(t *testing.T, rv string) uint64 {
	n, err := strconv.ParseUint(rv, 10, 64)
	require.NoError(t, err, "resourceVersion %q", rv)
	return n
}

// readOnly is a store that loads and never saves.
type readOnly struct{ persist.Store }

func (readOnly) Create(context.Context, persist.Identity) (persist.Pending, error) {
	return nil, errors.New("this replica only reads")
}

func storeObjects(store *driver.MemStore) map[string]string {
	out := map[string]string{}
	for _, obj := range store.List() {
		m, err := meta.Accessor(obj)
		if err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion() + " " + string(m.GetUID())
		}
	}
	return out
}

func (w *world) serverObjects() map[string]string {
	l, err := w.rb.Clientset().CoreV1().ConfigMaps(w.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(w.t, err)
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion + " " + string(cm.UID)
	}
	return out
}

// fullStateTransfers are the LISTs since the proxy's last reset but the limit=1 probe and
// its verification.
func (w *world) fullStateTransfers() int {
	n := 0
	for _, r := range w.proxy.Requests() {
		if r.Kind == faultproxy.List && r.Query.Get("limit") != "1" {
			n++
		}
	}
	return n
}

func (w *world) write(name, value string) {
	require.NoError(w.t, w.rb.Put(w.t.Context(), configMaps, w.ns, name, value))
}

// logRecorder keeps every log record as "LEVEL message key=value …".
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

// matching is the lines at level that begin with prefix (after the level).
func (l *logRecorder) matching(level slog.Level, prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, level.String()+" "+prefix) {
			out = append(out, s)
		}
	}
	return out
}

// bucketRV is the resourceVersion the bucket's snapshot of the world's identity says it holds.
func (w *world) bucketRV(prefix string) string {
	objs := w.raw().Client.ListObjects(context.Background(), bucketName, minio.ListObjectsOptions{Prefix: prefix + "/", WithMetadata: true, Recursive: true})
	for o := range objs {
		require.NoError(w.t, o.Err)
		info, err := w.raw().StatObject(context.Background(), bucketName, o.Key, minio.StatObjectOptions{})
		require.NoError(w.t, err)
		return info.UserMetadata["Rewatch-Resource-Version"]
	}
	return ""
}

// objectKey is the bucket's one object under prefix.
func (w *world) objectKey(prefix string) string {
	for o := range w.raw().Client.ListObjects(context.Background(), bucketName, minio.ListObjectsOptions{Prefix: prefix + "/", Recursive: true}) {
		require.NoError(w.t, o.Err)
		return o.Key
	}
	w.t.Fatalf("no object under %s/", prefix)
	return ""
}

func TestInARealBucket(t *testing.T) {
	w := newWorld(t)
	w.namespace("rollout", 600)

	t.Run("each new pod resumes from the bucket", func(t *testing.T) {
		w.t = t
		first := w.start(w.store("rollout", w.key), nil)
		w.synced(first)
		assert.Equal(t, rewatch.StartListed, first.r.Stats().Start.Way, "an empty bucket is no refusal")
		assert.Empty(t, first.logs.matching(slog.LevelWarn, ""), "nothing to warn of")
		w.write("cm-0001", "changed before the rollout")
		for i := range 3 {
			prev := first
			w.synced(prev)
			prev.stop()
			w.write(fmt.Sprintf("cm-%04d", 10+i), "changed while no pod ran")
			w.proxy.Reset()
			next := w.start(w.store("rollout", w.key), nil) // a new pod: a store of its own
			w.synced(next)
			start := next.r.Stats().Start
			assert.Equal(t, rewatch.StartResumed, start.Way, "%s", start)
			assert.Equal(t, 600, start.Restored)
			assert.Zero(t, w.fullStateTransfers(), "a new pod resumed with no LIST of everything")
			first = next
		}
		first.stop()
	})

	t.Run("unreachable at start: a plain start, said once", func(t *testing.T) {
		w.t = t
		w.s3.Stop()
		w.proxy.Reset()
		r := w.start(w.store("rollout", w.key), nil)
		w.synced(r)
		start := r.r.Stats().Start
		assert.Equal(t, rewatch.StartRefused, start.Way)
		assert.Contains(t, start.Refused, "cannot open it: objstore: get "+w.s3.Endpoint()+"/rewatch/rollout/configmaps.rollout-")
		assert.Contains(t, start.Refused, "connection refused")
		assert.Len(t, r.logs.matching(slog.LevelWarn, "persisted snapshot refused; listing instead"), 1)
		assert.Equal(t, 1, w.fullStateTransfers(), "one LIST of everything")
		r.stop()
		assert.Len(t, r.logs.matching(slog.LevelError, "persisting the store failed"), 1, "the stop's save failed, said once")
		require.NoError(t, w.s3.Start(t.Context()))
	})

	t.Run("unreachable at save: the watch goes on, said once, the next save works", func(t *testing.T) {
		w.t = t
		r := w.start(w.store("rollout", w.key), func(c *rewatch.Config) { c.PersistPeriod = 100 * time.Millisecond })
		w.synced(r)
		w.s3.Stop()
		for i := 0; ; i++ {
			w.write("cm-0002", "while the bucket is down "+strconv.Itoa(i))
			if p := r.r.Stats().Persist; p != nil && p.Failures >= 3 {
				break
			}
			require.Less(t, i, 600, "saves never failed: %+v", r.r.Stats().Persist)
			time.Sleep(50 * time.Millisecond)
		}
		w.synced(r) // the watch went on: the store holds every write
		assert.Len(t, r.logs.matching(slog.LevelError, "persisting the store failed"), 1, "said once, however many failures")
		assert.Contains(t, r.r.Stats().Persist.LastError, "connection refused")
		require.NoError(t, w.s3.Start(t.Context()))
		require.Eventually(t, func() bool {
			w.write("cm-0002", "after "+time.Now().String())
			p := r.r.Stats().Persist
			return p.Failures == 0
		}, 60*time.Second, 100*time.Millisecond, "a save works again")
		assert.Len(t, r.logs.matching(slog.LevelInfo, "persisting the store works again"), 1)
		r.stop()
		w.proxy.Reset()
		next := w.start(w.store("rollout", w.key), nil)
		w.synced(next)
		assert.Equal(t, rewatch.StartResumed, next.r.Stats().Start.Way)
		assert.Zero(t, w.fullStateTransfers())
		next.stop()
	})

	t.Run("a tampered object is refused, and replaced by the next save", func(t *testing.T) {
		w.t = t
		key := w.objectKey("rollout")
		core := w.raw()
		body, _, _, err := core.GetObject(t.Context(), bucketName, key, minio.GetObjectOptions{})
		require.NoError(t, err)
		raw, err := io.ReadAll(body)
		body.Close()
		require.NoError(t, err)
		rv := w.bucketRV("rollout")
		raw[200] ^= 0x01
		_, err = core.PutObject(t.Context(), bucketName, key, bytes.NewReader(raw), int64(len(raw)), "", "",
			minio.PutObjectOptions{UserMetadata: map[string]string{"Rewatch-Resource-Version": rv}})
		require.NoError(t, err)

		w.proxy.Reset()
		r := w.start(w.store("rollout", w.key), nil)
		w.synced(r)
		start := r.r.Stats().Start
		assert.Equal(t, rewatch.StartRefused, start.Way)
		assert.Equal(t, "chunk 0 fails authentication: tampered with, or not this snapshot's", start.Refused)
		assert.Len(t, r.logs.matching(slog.LevelWarn, "persisted snapshot refused"), 1)
		assert.Equal(t, 1, w.fullStateTransfers())
		w.write("cm-0003", "so that the stop's save is newer")
		w.synced(r)
		r.stop()
		w.proxy.Reset()
		next := w.start(w.store("rollout", w.key), nil)
		w.synced(next)
		assert.Equal(t, rewatch.StartResumed, next.r.Stats().Start.Way, "the save after the refusal replaced the tampered object")
		next.stop()
	})

	t.Run("another key, or none", func(t *testing.T) {
		w.t = t
		other := newKey(t)
		w.proxy.Reset()
		// A stranger that only reads: its stop's save would replace the others' snapshot
		// whenever the cluster's revision moved since theirs (a lease renewal will do; these
		// stores have no FreshFor), as a replica given only a new key must, and the rotation
		// below reads what the others sealed.
		r := w.start(readOnly{w.store("rollout", other)}, nil)
		w.synced(r)
		start := r.r.Stats().Start
		assert.Equal(t, rewatch.StartRefused, start.Way)
		assert.Equal(t, fmt.Sprintf("sealed with key %s, which is not one of this store's keys (%s)", w.key.ID(), other.ID()), start.Refused)
		assert.Equal(t, 1, w.fullStateTransfers())
		r.stop()
		assert.Equal(t, 1, r.r.Stats().Persist.Failures, "the stranger's stop tried to save, and could not")

		_, err := objstore.New(w.options("rollout"))
		assert.ErrorContains(t, err, "no sealing key")

		// Rotation: the new key first, the old one kept, reads what the old key sealed; once
		// re-saved, the new key alone reads it.
		rotated := newKey(t)
		w.write("cm-0004", "before the rotation")
		r = w.start(w.store("rollout", rotated, w.key), nil)
		w.synced(r)
		assert.Equal(t, rewatch.StartResumed, r.r.Stats().Start.Way, "%s", r.r.Stats().Start)
		r.stop()
		r = w.start(w.store("rollout", rotated), nil)
		w.synced(r)
		assert.Equal(t, rewatch.StartResumed, r.r.Stats().Start.Way, "%s", r.r.Stats().Start)
		r.stop()
		w.key = rotated
	})

	t.Run("two replicas saving at once never go back", func(t *testing.T) {
		w.t = t
		a := w.start(w.store("rollout", w.key), func(c *rewatch.Config) { c.PersistPeriod = 50 * time.Millisecond })
		b := w.start(w.store("rollout", w.key), func(c *rewatch.Config) { c.PersistPeriod = 50 * time.Millisecond })
		w.synced(a)
		w.synced(b)
		loader := w.store("rollout", w.key)
		id, codec := snapshotOf(t, a)
		var last uint64
		for i := range 60 {
			w.write(fmt.Sprintf("cm-%04d", 20+i%10), "both replicas see it "+strconv.Itoa(i))
			snap, err := persist.Load(t.Context(), loader, id, codec)
			require.NoError(t, err, "a load while both replicas save reads a whole snapshot")
			rv, err := strconv.ParseUint(snap.ResourceVersion, 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, rv, last, "the bucket's snapshot went back from %d to %d", last, rv)
			last = rv
			time.Sleep(20 * time.Millisecond)
		}
		a.stop()
		b.stop()
		assert.Zero(t, a.r.Stats().Persist.Failures)
		assert.Zero(t, b.r.Stats().Persist.Failures)
		// Either may have stopped a write behind the other.
		newest := max(rvNumber(t, a.r.Stats().LastResourceVersion), rvNumber(t, b.r.Stats().LastResourceVersion))
		assert.Equal(t, newest, rvNumber(t, w.bucketRV("rollout")), "the newest save is what the bucket holds")
	})

	t.Run("another cluster's snapshot under the same name is never synced, and replaced", func(t *testing.T) {
		w.t = t
		r := w.start(w.store("rollout", w.key), nil)
		w.synced(r)
		r.stop()
		old := w.bucketRV("rollout")
		require.NoError(t, w.rb.RecreateCluster(t.Context()))
		w.namespace("rollout", 600) // the same names in a new cluster, at lower resourceVersions
		w.proxy.Reset()
		r = w.start(w.store("rollout", w.key), nil)
		w.synced(r) // synced only with the new cluster's objects: names, resourceVersions, uids
		start := r.r.Stats().Start
		assert.Contains(t, []rewatch.StartWay{rewatch.StartSnapshotAhead, rewatch.StartSnapshotForeign}, start.Way, "%s", start)
		assert.Equal(t, old, start.SnapshotRV)
		r.stop()
		assert.Equal(t, r.r.Stats().LastResourceVersion, w.bucketRV("rollout"), "the disowned snapshot was replaced at once, though ahead")
		w.proxy.Reset()
		next := w.start(w.store("rollout", w.key), nil)
		w.synced(next)
		assert.Equal(t, rewatch.StartResumed, next.r.Stats().Start.Way)
		assert.Zero(t, w.fullStateTransfers())
		next.stop()
	})
}

// snapshotOf is the identity and codec a replica's snapshots are saved with, for a test's own
// loads: its transport's.
func snapshotOf(t *testing.T, r *replica) (persist.Identity, persist.Codec) {
	tr, err := httpapi.New(r.conn)
	require.NoError(t, err)
	codec, err := tr.SnapshotCodec()
	require.NoError(t, err)
	return tr.SnapshotIdentity(), codec
}

// blobCodec writes strings as their bytes, and calls at when item n is encoded: what lets a
// test cut a save midway.
type blobCodec struct {
	n  int
	at func()
	i  *int
}

func (blobCodec) MediaType() string { return "text/plain" }
func (c blobCodec) Encode(obj any) ([]byte, error) {
	if c.i != nil {
		*c.i++
		if *c.i == c.n && c.at != nil {
			c.at()
		}
	}
	return []byte(obj.(string)), nil
}
func (blobCodec) Decode(raw []byte) (any, error) { return string(raw), nil }

var blobID = persist.Identity{Server: "https://10.96.0.1:443", Version: "v1", Resource: "configmaps", Decoder: "test"}

func blobs(n int, tag string) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%06d %s", tag, i, strings.Repeat("z", 1000))
	}
	return out
}

// An upload cut midway — its context ended after two parts, the server stopped under it, its
// process gone without a word — leaves the previous snapshot whole and readable, on a real
// S3 server; and a load while a save is under way reads the previous one.
func TestACutUploadLeavesThePreviousSnapshotInARealBucket(t *testing.T) {
	w := newBucketWorld(t)
	st := w.store("cut", w.key)
	before := blobs(8000, "before") // 8 MB: two parts
	_, err := persist.Save(t.Context(), st, blobID, blobCodec{}, "100", before, time.Now())
	require.NoError(t, err)
	loadPrevious := func() {
		snap, err := persist.Load(context.Background(), st, blobID, blobCodec{})
		require.NoError(t, err)
		assert.Equal(t, "100", snap.ResourceVersion)
		assert.Equal(t, before, snap.Items)
	}

	// Its context ended once two parts are up.
	ctx, cancel := context.WithCancel(t.Context())
	var i int
	_, err = persist.Save(ctx, st, blobID, blobCodec{n: 11000, i: &i, at: cancel}, "200", blobs(16000, "cut"), time.Now())
	assert.ErrorIs(t, err, context.Canceled)
	loadPrevious()

	// The server stopped under it, then started again.
	i = 0
	_, err = persist.Save(t.Context(), st, blobID, blobCodec{n: 11000, i: &i, at: w.s3.Stop}, "300", blobs(16000, "down"), time.Now())
	assert.ErrorContains(t, err, "connection refused")
	require.NoError(t, w.s3.Start(t.Context()))
	loadPrevious()

	// The writer's process gone: parts up, the upload neither completed nor aborted; a load
	// meanwhile reads the previous snapshot.
	p, err := st.(persist.OrderedStore).CreateFor(t.Context(), blobID, persist.SnapshotInfo{ResourceVersion: "400"})
	require.NoError(t, err)
	_, err = p.Write(bytes.Repeat([]byte("k"), 11<<20))
	require.NoError(t, err)
	loadPrevious()
	_ = p // never committed

	// The next save of the identity works.
	after := blobs(100, "after")
	_, err = persist.Save(t.Context(), st, blobID, blobCodec{}, "500", after, time.Now())
	require.NoError(t, err)
	snap, err := persist.Load(t.Context(), st, blobID, blobCodec{})
	require.NoError(t, err)
	assert.Equal(t, after, snap.Items)
}

// On a real S3 server, a save begins no upload of a snapshot another replica is uploading: the
// first snapshot of an identity, whose upload is in progress, is left to it, and what the
// bucket ends with is that upload's (docs/semantics.md, "Shared by replicas").
func TestASaveLeavesTheSnapshotToAnUploadInProgressInARealBucket(t *testing.T) {
	w := newBucketWorld(t)
	o := w.options("uploading", w.key)
	o.FreshFor = 0 // the default
	first, err := objstore.New(o)
	require.NoError(t, err)
	second, err := objstore.New(o)
	require.NoError(t, err)

	p, err := first.(persist.OrderedStore).CreateFor(t.Context(), blobID, persist.SnapshotInfo{ResourceVersion: "100"})
	require.NoError(t, err)
	_, err = p.Write(bytes.Repeat([]byte("u"), 6<<20)) // more than a part: the upload has begun
	require.NoError(t, err)

	stats, err := persist.Save(t.Context(), second, blobID, blobCodec{}, "200", blobs(10, "second"), time.Now())
	require.NoError(t, err)
	assert.True(t, stats.Superseded, "the second replica left the snapshot to the upload in progress")

	require.NoError(t, p.Commit())
	rv := w.bucketRV("uploading")
	assert.Equal(t, "100", rv, "the bucket holds the first replica's upload")
}

// Many writers saving at once — large snapshots, multipart uploads racing to complete — leave
// the newest in the bucket, and every load meanwhile reads a whole snapshot whose
// resourceVersion never goes back.
func TestWritersRacingLeaveTheNewest(t *testing.T) {
	w := newBucketWorld(t)
	const writers, rounds = 4, 5
	var wg sync.WaitGroup
	var mu sync.Mutex
	superseded, written := 0, 0
	for k := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := w.store("race", w.key)
			for r := range rounds {
				rv := strconv.Itoa(1000 + r*writers + k)
				stats, err := persist.Save(context.Background(), st, blobID, blobCodec{}, rv, blobs(6000, rv), time.Now())
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				if stats.Superseded {
					superseded++
				} else {
					written++
				}
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	loader := w.store("race", w.key)
	var last uint64
	loads := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		snap, err := persist.Load(context.Background(), loader, blobID, blobCodec{})
		if errors.Is(err, persist.ErrNotFound) {
			continue
		}
		require.NoError(t, err, "a load while writers race reads a whole snapshot")
		rv, _ := strconv.ParseUint(snap.ResourceVersion, 10, 64)
		require.GreaterOrEqual(t, rv, last)
		require.Len(t, snap.Items, 6000)
		require.True(t, strings.HasPrefix(snap.Items[0].(string), snap.ResourceVersion+"-"), "the items are the snapshot's own")
		last = rv
		loads++
	}
	snap, err := persist.Load(context.Background(), loader, blobID, blobCodec{})
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(1000+(rounds-1)*writers+writers-1), snap.ResourceVersion, "the newest snapshot is the one kept")
	t.Logf("%d saves written, %d superseded, %d loads meanwhile", written, superseded, loads)
	assert.Equal(t, writers*rounds, written+superseded)
	assert.Positive(t, superseded, "some saves found a newer snapshot and wrote nothing")
}

package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

// These tests run against gofakes3, an in-process fake of S3: the store's own logic. The
// e2e tests (e2e_test.go) run it against a real S3 server, SeaweedFS.

// textCodec stores strings as their bytes.
type textCodec struct{}

func (textCodec) MediaType() string              { return "text/plain" }
func (textCodec) Encode(obj any) ([]byte, error) { return []byte(obj.(string)), nil }
func (textCodec) Decode(raw []byte) (any, error) { return string(raw), nil }

var testID = persist.Identity{Server: "https://10.96.0.1:443", Version: "v1", Resource: "configmaps", Namespace: "default",
	Decoder: "typed application/vnd.kubernetes.protobuf", Shape: "v1.ConfigMap@1"}

func newKey(t testing.TB) persist.Key {
	var k persist.Key
	_, err := rand.Read(k[:])
	require.NoError(t, err)
	return k
}

// objects is n strings of size bytes each, told apart by their first bytes.
func objects(n, size int) []any {
	out := make([]any, n)
	for i := range out {
		s := fmt.Sprintf("object-%06d ", i)
		out[i] = s + strings.Repeat("v", max(0, size-len(s)))
	}
	return out
}

// fake is gofakes3 behind a counting transport.
type fake struct {
	url     string
	backend *s3mem.Backend
	reqs    *requestLog
}

func newFake(t *testing.T) *fake {
	be := s3mem.New()
	require.NoError(t, be.CreateBucket("snapshots"))
	srv := httptest.NewServer(gofakes3.New(be).Server())
	t.Cleanup(srv.Close)
	return &fake{url: srv.URL, backend: be, reqs: &requestLog{base: http.DefaultTransport}}
}

func (f *fake) options(keys ...persist.Key) Options {
	return Options{Endpoint: f.url, Region: "us-east-1", Bucket: "snapshots", Prefix: "team-a/controller", Keys: keys,
		Credentials: credentials.NewStaticV4("AKIDEXAMPLE", "secret", ""), Transport: f.reqs, FreshFor: -1}
}

// bucketOf is the sealed store and the bucket under it, for tests that move its clock.
func (f *fake) bucketOf(t *testing.T, keys ...persist.Key) (persist.Store, *bucket) {
	return sealedBucket(t, f.options(keys...))
}

// freshBucketOf is bucketOf with FreshFor at its default, 10 s.
func (f *fake) freshBucketOf(t *testing.T, keys ...persist.Key) (persist.Store, *bucket) {
	o := f.options(keys...)
	o.FreshFor = 0
	return sealedBucket(t, o)
}

func sealedBucket(t *testing.T, o Options) (persist.Store, *bucket) {
	b, err := newBucket(o)
	require.NoError(t, err)
	st, err := persist.Sealed(b, o.Keys...)
	require.NoError(t, err)
	return st, b
}

// requestLog counts the requests by kind and the bytes of each upload's body.
type requestLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	log  []string
	// largest is the largest request body sent.
	largest int64
}

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := r.Method
	q := r.URL.Query()
	switch {
	case q.Has("uploads"):
		kind += " uploads"
	case q.Has("partNumber"):
		kind += " part"
	case q.Has("uploadId"):
		kind += " upload"
	}
	if h := r.Header.Get("If-Match"); h != "" {
		kind += " If-Match"
	}
	if h := r.Header.Get("If-None-Match"); h != "" {
		kind += " If-None-Match:" + h
	}
	l.mu.Lock()
	l.log = append(l.log, kind)
	l.largest = max(l.largest, r.ContentLength)
	l.mu.Unlock()
	return l.base.RoundTrip(r)
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.log
	l.log = nil
	return out
}

func rawObject(t *testing.T, f *fake) ([]byte, minio.ObjectInfo) {
	b, err := newBucket(f.options())
	require.NoError(t, err)
	body, info, _, err := b.core.GetObject(t.Context(), "snapshots", b.object(testID), minio.GetObjectOptions{})
	require.NoError(t, err)
	defer body.Close()
	raw, err := io.ReadAll(body)
	require.NoError(t, err)
	return raw, info
}

func save(t *testing.T, st persist.Store, rv string, objs []any) persist.SaveStats {
	t.Helper()
	stats, err := persist.Save(t.Context(), st, testID, textCodec{}, rv, objs, time.Now())
	require.NoError(t, err)
	return stats
}

func load(t *testing.T, st persist.Store) *persist.Snapshot {
	t.Helper()
	snap, err := persist.Load(t.Context(), st, testID, textCodec{})
	require.NoError(t, err)
	return snap
}

// A snapshot goes up sealed — as one PUT when smaller than a part, as a multipart upload of
// PartSize parts otherwise — and comes back whole; the bucket holds none of it in clear, and
// its resourceVersion in the object's metadata (docs/semantics.md, "In object storage").
func TestASnapshotRoundTripsSealedAndStreamed(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	st, err := New(f.options(k))
	require.NoError(t, err)

	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	require.ErrorIs(t, err, persist.ErrNotFound)
	f.reqs.take()

	small := objects(100, 100)
	save(t, st, "1000", small)
	assert.Equal(t, []string{"GET uploads", "HEAD", "PUT If-None-Match:*"}, f.reqs.take(), "list abandoned uploads, look, one conditional PUT")
	assert.Equal(t, small, load(t, st).Items)
	f.reqs.take()

	// 12 MB: three parts of 5 MiB at most, none held whole.
	big := objects(12000, 1000)
	save(t, st, "2000", big)
	log := f.reqs.take()
	assert.Equal(t, []string{"HEAD", "POST uploads", "PUT part", "PUT part", "PUT part", "POST upload If-Match"}, log)
	assert.LessOrEqual(t, f.reqs.largest, int64(MinPartSize), "no request carries more than a part")
	snap := load(t, st)
	assert.Equal(t, big, snap.Items)
	assert.Equal(t, "2000", snap.ResourceVersion)

	raw, info := rawObject(t, f)
	assert.True(t, bytes.HasPrefix(raw, []byte("\x89RWSEAL\n")), "sealed")
	assert.False(t, bytes.Contains(raw, []byte("object-000001")), "objects in clear in the bucket")
	assert.Equal(t, "2000", info.UserMetadata[metaRV])
	assert.Equal(t, "team-a/controller/"+persist.FileName(testID), info.Key)
}

// A save never replaces a snapshot at a later resourceVersion: it looks first, and writes
// nothing when the bucket holds one at least as new (docs/semantics.md, "Shared by replicas").
func TestAnOlderSaveNeverReplacesANewerSnapshot(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	a, err := New(f.options(k))
	require.NoError(t, err)
	b, err := New(f.options(k))
	require.NoError(t, err)

	save(t, a, "500", objects(3, 10))
	f.reqs.take()
	stats := save(t, b, "400", objects(2, 10))
	assert.True(t, stats.Superseded, "the older save is superseded")
	assert.Equal(t, []string{"GET uploads", "HEAD"}, f.reqs.take(), "nothing uploaded")
	assert.True(t, save(t, b, "500", objects(2, 10)).Superseded, "the same resourceVersion is kept too")
	assert.Equal(t, "500", load(t, b).ResourceVersion)
	f.reqs.take()

	stats = save(t, b, "600", objects(4, 10))
	assert.False(t, stats.Superseded)
	assert.Equal(t, []string{"HEAD", "PUT If-Match"}, f.reqs.take())
	snap := load(t, a)
	assert.Equal(t, "600", snap.ResourceVersion)
	assert.Len(t, snap.Items, 4)
}

// A snapshot younger than FreshFor is kept from a newer save: the replicas hold the same
// state, and the bucket sees one upload per FreshFor rather than one per replica and period.
func TestAFreshSnapshotIsKept(t *testing.T) {
	f := newFake(t)
	st, b := f.freshBucketOf(t, newKey(t))
	save(t, st, "100", objects(1, 10))
	assert.True(t, save(t, st, "200", objects(1, 10)).Superseded, "a snapshot of a second ago is kept")
	b.now = func() time.Time { return time.Now().Add(DefaultFreshFor + time.Second) }
	assert.False(t, save(t, st, "200", objects(1, 10)).Superseded)
	assert.Equal(t, "200", load(t, st).ResourceVersion)
}

// While another replica uploads a snapshot, a save begins no upload of its own: that one will
// be as fresh as FreshFor asks when it lands, and a second would only lose at its completion,
// its parts spent. An upload begun more than UploadingFor ago is a killed writer's parts; with
// FreshFor off, or for a save that replaces the snapshot it disowned, every save uploads.
func TestASaveLeavesTheSnapshotToAnUploadInProgress(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	st, b := f.freshBucketOf(t, k)
	save(t, st, "100", objects(1, 10))
	b.now = func() time.Time { return time.Now().Add(DefaultFreshFor + time.Second) }

	_, other := f.freshBucketOf(t, k)
	uploadID, err := other.core.NewMultipartUpload(t.Context(), "snapshots", b.object(testID), minio.PutObjectOptions{})
	require.NoError(t, err)
	f.reqs.take()
	assert.True(t, save(t, st, "200", objects(1, 10)).Superseded, "another replica is uploading")
	assert.Equal(t, []string{"HEAD", "GET uploads"}, f.reqs.take(), "nothing uploaded")

	info := persist.SnapshotInfo{ResourceVersion: "200", Written: time.Now(), Disowned: "100"}
	stats, err := persist.SaveSnapshot(t.Context(), st, testID, textCodec{}, info, objects(1, 10))
	require.NoError(t, err)
	assert.False(t, stats.Superseded, "the snapshot it disowned is replaced whoever uploads")

	b.now = func() time.Time { return time.Now().Add(UploadingFor + time.Second) }
	assert.False(t, save(t, st, "300", objects(1, 10)).Superseded, "an upload begun more than UploadingFor ago is abandoned")
	assert.Equal(t, "300", load(t, st).ResourceVersion)

	b.now = time.Now
	b.freshFor = 0
	assert.False(t, save(t, st, "400", objects(1, 10)).Superseded, "FreshFor off")
	require.NoError(t, other.core.AbortMultipartUpload(t.Context(), "snapshots", b.object(testID), uploadID))
}

// A snapshot at a later resourceVersion that is older than ReplaceAfter is not of the
// cluster's present — resourceVersions only grow — but of a cluster recreated at the same
// address, or of one restored from a backup: a save replaces it.
func TestAStaleSnapshotAheadIsReplaced(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	st, b := f.bucketOf(t, k)
	save(t, st, "900000", objects(3, 10))
	assert.True(t, save(t, st, "1200", objects(2, 10)).Superseded)

	b.now = func() time.Time { return time.Now().Add(DefaultReplaceAfter + time.Minute) }
	assert.False(t, save(t, st, "1200", objects(2, 10)).Superseded)
	assert.Equal(t, "1200", load(t, st).ResourceVersion)
}

// A writer that loaded a snapshot at its start and found it not the server's (the machine
// dropped it: ahead, another cluster's) replaces it at once, however young: it is no replica's
// newer work. Any other snapshot ahead is still kept.
func TestADisownedSnapshotIsReplacedAtOnce(t *testing.T) {
	f := newFake(t)
	st, err := New(f.options(newKey(t)))
	require.NoError(t, err)
	save(t, st, "900000", objects(3, 10))
	info := persist.SnapshotInfo{ResourceVersion: "1200", Written: time.Now(), Disowned: "800000"}
	stats, err := persist.SaveSnapshot(t.Context(), st, testID, textCodec{}, info, objects(2, 10))
	require.NoError(t, err)
	assert.True(t, stats.Superseded, "another snapshot than the one disowned is kept")
	info.Disowned = "900000"
	stats, err = persist.SaveSnapshot(t.Context(), st, testID, textCodec{}, info, objects(2, 10))
	require.NoError(t, err)
	assert.False(t, stats.Superseded)
	assert.Equal(t, "1200", load(t, st).ResourceVersion)
}

// Another writer replacing the object between the look and the write makes the write's
// condition fail; the save looks again: a newer snapshot is kept, an older one replaced.
func TestAWriteRacingAnotherLooksAgain(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	st, err := New(f.options(k))
	require.NoError(t, err)
	other, err := New(f.options(k))
	require.NoError(t, err)
	save(t, st, "100", objects(1, 10))

	// A newer one lands while this save is being written: the save is superseded.
	racer := raceWith(t, st, func() { save(t, other, "300", objects(3, 10)) })
	stats, err := persist.Save(t.Context(), racer, testID, textCodec{}, "200", objects(2, 10), time.Now())
	require.NoError(t, err)
	assert.True(t, stats.Superseded)
	assert.Equal(t, "300", load(t, st).ResourceVersion)
	f.reqs.take()

	// An older one lands meanwhile (forced under the store's back): the save replaces it.
	forced, fb := f.bucketOf(t, k)
	fb.now = func() time.Time { return time.Now().Add(time.Hour) } // so that it replaces 300
	racer = raceWith(t, st, func() { save(t, forced, "250", objects(5, 10)) })
	stats, err = persist.Save(t.Context(), racer, testID, textCodec{}, "400", objects(4, 10), time.Now())
	require.NoError(t, err)
	assert.False(t, stats.Superseded)
	log := f.reqs.take()
	assert.Equal(t, []string{"PUT If-Match", "HEAD", "PUT If-Match"}, log[len(log)-3:], "refused for its condition, looked again, wrote")
	snap := load(t, st)
	assert.Equal(t, "400", snap.ResourceVersion)
	assert.Len(t, snap.Items, 4)
}

// raceWith is st with meanwhile run between a pending snapshot's last write and its commit.
func raceWith(t *testing.T, st persist.Store, meanwhile func()) persist.Store {
	return racingStore{st.(persist.OrderedStore), meanwhile}
}

type racingStore struct {
	persist.OrderedStore
	meanwhile func()
}

func (r racingStore) CreateFor(ctx context.Context, id persist.Identity, info persist.SnapshotInfo) (persist.Pending, error) {
	p, err := r.OrderedStore.CreateFor(ctx, id, info)
	if err != nil {
		return nil, err
	}
	return racingPending{p, r.meanwhile}, nil
}

type racingPending struct {
	persist.Pending
	meanwhile func()
}

func (r racingPending) Commit() error { r.meanwhile(); return r.Pending.Commit() }

// A save cut midway — aborted, or its process killed with parts uploaded — leaves the
// previous snapshot whole and readable; a load meanwhile reads the previous one.
func TestACutUploadLeavesThePreviousSnapshot(t *testing.T) {
	f := newFake(t)
	k := newKey(t)
	st, b := f.bucketOf(t, k)
	before := objects(50, 100)
	save(t, st, "100", before)

	// Two parts up, then killed: the upload is never completed nor aborted.
	p, err := st.(persist.OrderedStore).CreateFor(t.Context(), testID, persist.SnapshotInfo{ResourceVersion: "200"})
	require.NoError(t, err)
	_, err = p.Write(bytes.Repeat([]byte("x"), 2*MinPartSize+10))
	require.NoError(t, err)
	snap := load(t, st)
	assert.Equal(t, "100", snap.ResourceVersion, "a load while a save is under way reads the previous snapshot")
	assert.Equal(t, before, snap.Items)
	uploads, err := b.core.ListMultipartUploads(t.Context(), "snapshots", b.object(testID), "", "", "", 10)
	require.NoError(t, err)
	require.Len(t, uploads.Uploads, 1, "the killed writer's parts")

	// Aborted: the upload is gone, the snapshot unchanged.
	p2, err := st.(persist.OrderedStore).CreateFor(t.Context(), testID, persist.SnapshotInfo{ResourceVersion: "300"})
	require.NoError(t, err)
	_, err = p2.Write(bytes.Repeat([]byte("y"), MinPartSize+10))
	require.NoError(t, err)
	require.NoError(t, p2.Abort())
	assert.Equal(t, before, load(t, st).Items)

	// A day later, a process's first save of the identity aborts the dead writer's upload.
	st2, b2 := f.bucketOf(t, k)
	b2.now = func() time.Time { return time.Now().Add(25 * time.Hour) }
	b2.replaceAfter = 100 * time.Hour
	save(t, st2, "400", objects(2, 10))
	uploads, err = b2.core.ListMultipartUploads(t.Context(), "snapshots", b2.object(testID), "", "", "", 10)
	require.NoError(t, err)
	assert.Empty(t, uploads.Uploads)
}

// What a bucket holds that this controller did not seal — in clear, with another key, changed
// — is refused with a one-line reason; without keys there is no store.
func TestWhatTheControllerDidNotSealIsRefused(t *testing.T) {
	f := newFake(t)
	k, other := newKey(t), newKey(t)
	_, err := New(f.options())
	assert.ErrorContains(t, err, "no sealing key")

	st, err := New(f.options(k))
	require.NoError(t, err)
	save(t, st, "100", objects(20, 100))

	foreign, err := New(f.options(other))
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), foreign, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, fmt.Sprintf("sealed with key %s, which is not one of this store's keys (%s)", k.ID(), other.ID()), r.Reason)

	// Tampered with in the bucket: a byte of the sealed data changed.
	raw, _ := rawObject(t, f)
	raw[len(raw)-40] ^= 1
	b, err := newBucket(f.options())
	require.NoError(t, err)
	_, err = b.core.PutObject(t.Context(), "snapshots", b.object(testID), bytes.NewReader(raw), int64(len(raw)), "", "", minio.PutObjectOptions{})
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "chunk 0 fails authentication: tampered with, or not this snapshot's", r.Reason)

	// Planted in clear (the format persist.Dir writes, with a resourceVersion far ahead).
	clear, err := newBucket(f.options())
	require.NoError(t, err)
	_, err = persist.Save(t.Context(), clear, testID, textCodec{}, "99999999", objects(1, 10), time.Now())
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Reason, "not sealed")
}

// A store that cannot be reached fails a load at once — a refusal, so that the reflector
// starts plainly — and a save with an error, not a wait.
func TestAnUnreachableStoreFailsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there now
	st, err := New(Options{Endpoint: addr, Region: "us-east-1", Bucket: "snapshots", Keys: []persist.Key{newKey(t)},
		Credentials: credentials.NewStaticV4("a", "b", "")})
	require.NoError(t, err)
	start := time.Now()
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Reason, "cannot open it: objstore: get "+addr+"/snapshots/configmaps.default-")
	assert.Contains(t, r.Reason, "connection refused")
	_, err = persist.Save(t.Context(), st, testID, textCodec{}, "1", objects(1, 1), time.Now())
	assert.ErrorContains(t, err, "connection refused")
	assert.Less(t, time.Since(start), 30*time.Second)

	// A bucket that does not exist, likewise.
	f := newFake(t)
	o := f.options(newKey(t))
	o.Bucket = "missing"
	st, err = New(o)
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Reason, "bucket does not exist")
	_, err = persist.Save(t.Context(), st, testID, textCodec{}, "1", objects(1, 1), time.Now())
	assert.ErrorContains(t, err, "bucket does not exist")
}

func TestOptionsAreChecked(t *testing.T) {
	k := newKey(t)
	for name, o := range map[string]Options{
		"no bucket":       {Keys: []persist.Key{k}},
		"small parts":     {Bucket: "b", Keys: []persist.Key{k}, PartSize: 1 << 20},
		"endpoint scheme": {Bucket: "b", Keys: []persist.Key{k}, Endpoint: "ftp://host"},
		"endpoint path":   {Bucket: "b", Keys: []persist.Key{k}, Endpoint: "https://host/path"},
	} {
		_, err := New(o)
		assert.Error(t, err, name)
	}
}

func TestParseURL(t *testing.T) {
	o, err := ParseURL("s3://bucket/team/ctl/?endpoint=http://127.0.0.1:8333&region=eu-west-1&path-style=true")
	require.NoError(t, err)
	assert.Equal(t, &Options{Bucket: "bucket", Prefix: "team/ctl", Endpoint: "http://127.0.0.1:8333", Region: "eu-west-1", PathStyle: true}, o)
	o, err = ParseURL("s3://bucket")
	require.NoError(t, err)
	assert.Equal(t, &Options{Bucket: "bucket"}, o)
	o, err = ParseURL("file:///var/cache/rewatch")
	require.NoError(t, err)
	assert.Nil(t, o)

	for raw, want := range map[string]string{
		"/var/cache":                   "has no scheme",
		"gs://bucket":                  `scheme "gs" is not file or s3`,
		"s3:///prefix":                 "names no bucket",
		"s3://bucket?regoin=x":         "unknown parameter regoin (known: endpoint, region, path-style)",
		"s3://key:secret@bucket":       "credentials do not go in the URL",
		"s3://bucket?path-style=maybe": `path-style="maybe" is not true or false`,
		"file://host/dir":              "a file URL names a local directory",
		"file:///dir?x=1":              "with no query",
	} {
		_, err := ParseURL(raw)
		assert.ErrorContains(t, err, want, raw)
	}

	dir := t.TempDir()
	st, err := OpenURL("file://"+dir, nil)
	require.NoError(t, err)
	save(t, st, "1", objects(1, 1))
	assert.Equal(t, "1", load(t, st).ResourceVersion)
	sealedDir, err := OpenURL("file://"+dir, []persist.Key{newKey(t)})
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), sealedDir, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r, "the sealed directory store refuses the snapshot in clear")
	_, err = OpenURL("s3://bucket", nil)
	assert.ErrorContains(t, err, "no sealing key")
	_ = errors.New
}

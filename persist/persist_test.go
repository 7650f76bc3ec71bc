package persist_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

// textCodec stores strings as their bytes; "undecodable" items fail to decode.
type textCodec struct{ media string }

func (c textCodec) MediaType() string {
	if c.media == "" {
		return "text/plain"
	}
	return c.media
}

func (textCodec) Encode(obj any) ([]byte, error) {
	s, ok := obj.(string)
	if !ok {
		return nil, fmt.Errorf("not a string: %T", obj)
	}
	return []byte(s), nil
}

func (textCodec) Decode(raw []byte) (any, error) {
	if bytes.HasPrefix(raw, []byte("undecodable")) {
		return nil, errors.New("this item does not decode")
	}
	return string(raw), nil
}

var testID = persist.Identity{
	Server: "https://127.0.0.1:6443", Group: "apps", Version: "v1", Resource: "deployments",
	Namespace: "default", LabelSelector: "app=web", FieldSelector: "metadata.name!=x", Decoder: "typed application/vnd.kubernetes.protobuf",
}

var written = time.Date(2026, 12, 5, 7, 0, 0, 123456789, time.UTC)

func items(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("object %d %s", i, strings.Repeat("x", i%97))
	}
	return out
}

// memStore keeps one snapshot per identity in memory, committed atomically.
type memStore struct {
	mu    sync.Mutex
	files map[persist.Identity][]byte
	// all, when set, serves every identity the one file (a store that cannot tell them apart).
	all bool
}

func newMemStore() *memStore { return &memStore{files: map[persist.Identity][]byte{}} }

func (m *memStore) key(id persist.Identity) persist.Identity {
	if m.all {
		return persist.Identity{}
	}
	return id
}

func (m *memStore) Open(_ context.Context, id persist.Identity) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[m.key(id)]
	if !ok {
		return nil, persist.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m *memStore) Create(_ context.Context, id persist.Identity) (persist.Pending, error) {
	return &memPending{m: m, id: m.key(id)}, nil
}

func (m *memStore) file(id persist.Identity) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files[m.key(id)]
}

func (m *memStore) put(id persist.Identity, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[m.key(id)] = b
}

type memPending struct {
	m   *memStore
	id  persist.Identity
	buf bytes.Buffer
}

func (p *memPending) Write(b []byte) (int, error) { return p.buf.Write(b) }
func (p *memPending) Commit() error {
	p.m.put(p.id, bytes.Clone(p.buf.Bytes()))
	return nil
}
func (p *memPending) Abort() error { return nil }

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			st := persist.Dir(t.TempDir())
			objs := items(n)
			stats, err := persist.Save(t.Context(), st, testID, textCodec{}, "12345", objs, written)
			require.NoError(t, err)
			assert.Equal(t, n, stats.Count)
			snap, err := persist.Load(t.Context(), st, testID, textCodec{})
			require.NoError(t, err)
			assert.Equal(t, testID, snap.Identity)
			assert.Equal(t, "12345", snap.ResourceVersion)
			assert.True(t, written.Equal(snap.Written), "written %v, loaded %v", written, snap.Written)
			assert.Equal(t, objs, snap.Items)
		})
	}
}

func TestSaveStatsCountTheFile(t *testing.T) {
	dir := t.TempDir()
	st := persist.Dir(dir)
	stats, err := persist.Save(t.Context(), st, testID, textCodec{}, "7", items(50), written)
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, persist.FileName(testID)))
	require.NoError(t, err)
	assert.Equal(t, fi.Size(), stats.Bytes)
	assert.Equal(t, 50, stats.Count)
}

func TestASecondSaveReplacesTheFirst(t *testing.T) {
	st := persist.Dir(t.TempDir())
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(10), written)
	require.NoError(t, err)
	_, err = persist.Save(t.Context(), st, testID, textCodec{}, "2", items(3), written.Add(time.Minute))
	require.NoError(t, err)
	snap, err := persist.Load(t.Context(), st, testID, textCodec{})
	require.NoError(t, err)
	assert.Equal(t, "2", snap.ResourceVersion)
	assert.Equal(t, items(3), snap.Items)
}

func TestNoSnapshotIsErrNotFound(t *testing.T) {
	_, err := persist.Load(t.Context(), persist.Dir(filepath.Join(t.TempDir(), "missing")), testID, textCodec{})
	require.ErrorIs(t, err, persist.ErrNotFound)
	_, err = persist.Load(t.Context(), persist.Dir(t.TempDir()), testID, textCodec{})
	require.ErrorIs(t, err, persist.ErrNotFound)
}

func TestPermissionsAreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "nested")
	_, err := persist.Save(t.Context(), persist.Dir(dir), testID, textCodec{}, "1", items(2), written)
	require.NoError(t, err)
	di, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o700), di.Mode().Perm())
	fi, err := os.Stat(filepath.Join(dir, persist.FileName(testID)))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), e.Name())
	}
}

func TestAFileOthersMayUseIsRefused(t *testing.T) {
	for _, mode := range []fs.FileMode{0o640, 0o604, 0o620, 0o602} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			st := persist.Dir(dir)
			_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(2), written)
			require.NoError(t, err)
			require.NoError(t, os.Chmod(filepath.Join(dir, persist.FileName(testID)), mode))
			_, err = persist.Load(t.Context(), st, testID, textCodec{})
			var r *persist.Refused
			require.ErrorAs(t, err, &r)
			assert.Contains(t, r.Reason, "others may")
		})
	}
}

func TestADirectoryOthersMayWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	st := persist.Dir(dir)
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(2), written)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Reason, "others may write")
	_, err = persist.Save(t.Context(), st, testID, textCodec{}, "2", items(2), written)
	require.ErrorContains(t, err, "others may write")

	// A directory inside it (an emptyDir volume's case) is made 0700 and serves.
	sub := persist.Dir(filepath.Join(dir, "rewatch"))
	_, err = persist.Save(t.Context(), sub, testID, textCodec{}, "3", items(2), written)
	require.NoError(t, err)
	snap, err := persist.Load(t.Context(), sub, testID, textCodec{})
	require.NoError(t, err)
	assert.Equal(t, "3", snap.ResourceVersion)
}

func TestFileNameIsReadableAndTellsIdentitiesApart(t *testing.T) {
	name := persist.FileName(testID)
	assert.True(t, strings.HasPrefix(name, "deployments.apps.default-"), name)
	assert.True(t, strings.HasSuffix(name, ".snap"), name)
	seen := map[string]string{name: "base"}
	for _, c := range identityChanges() {
		n := persist.FileName(c.id)
		_, dup := seen[n]
		assert.False(t, dup, "%s shares a file name with %s", c.field, seen[n])
		seen[n] = c.field
	}
	assert.Equal(t, "a_b.c-", persist.FileName(persist.Identity{Resource: "a/b", Namespace: "c"})[:6])
}

type identityChange struct {
	field string
	id    persist.Identity
}

func identityChanges() []identityChange {
	ch := func(field string, f func(*persist.Identity)) identityChange {
		id := testID
		f(&id)
		return identityChange{field, id}
	}
	return []identityChange{
		ch("server", func(id *persist.Identity) { id.Server = "https://127.0.0.1:6444" }),
		ch("group", func(id *persist.Identity) { id.Group = "extensions" }),
		ch("version", func(id *persist.Identity) { id.Version = "v1beta1" }),
		ch("resource", func(id *persist.Identity) { id.Resource = "replicasets" }),
		ch("namespace", func(id *persist.Identity) { id.Namespace = "" }),
		ch("labelSelector", func(id *persist.Identity) { id.LabelSelector = "app=db" }),
		ch("fieldSelector", func(id *persist.Identity) { id.FieldSelector = "" }),
		ch("decoder", func(id *persist.Identity) { id.Decoder = "unstructured application/json" }),
	}
}

func TestAnotherIdentityIsRefusedNamingTheField(t *testing.T) {
	for _, c := range identityChanges() {
		t.Run(c.field, func(t *testing.T) {
			// Through a directory: the other identity's file is this one's, renamed.
			dir := t.TempDir()
			_, err := persist.Save(t.Context(), persist.Dir(dir), testID, textCodec{}, "1", items(3), written)
			require.NoError(t, err)
			require.NoError(t, os.Rename(filepath.Join(dir, persist.FileName(testID)), filepath.Join(dir, persist.FileName(c.id))))
			_, err = persist.Load(t.Context(), persist.Dir(dir), c.id, textCodec{})
			var r *persist.Refused
			require.ErrorAs(t, err, &r)
			assert.Contains(t, r.Reason, "another identity: "+c.field+" ")
			assert.NotContains(t, r.Reason, "\n")
			assert.NotContains(t, r.Reason, ";", "only %s differs", c.field)

			// And through a store that cannot tell identities apart.
			st := newMemStore()
			st.all = true
			_, err = persist.Save(t.Context(), st, testID, textCodec{}, "1", items(3), written)
			require.NoError(t, err)
			_, err = persist.Load(t.Context(), st, c.id, textCodec{})
			require.ErrorAs(t, err, &r)
			assert.Contains(t, r.Reason, "another identity: "+c.field+" ")
		})
	}
}

func TestAnotherMediaTypeIsRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(3), written)
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{media: "application/json"})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "items are text/plain, this codec reads application/json", r.Reason)
}

func TestAnItemThatDoesNotDecodeIsRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", []any{"a", "undecodable b", "c"}, written)
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "item 1 of 3 does not decode as text/plain: this item does not decode", r.Reason)
}

func TestAnotherFormatVersionIsRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(3), written)
	require.NoError(t, err)
	b := bytes.Clone(st.file(testID))
	b[9] = 2 // the version's low byte
	st.put(testID, b)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "format version 2, this build reads 1", r.Reason)
}

func TestEveryTruncationIsRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "99", items(5), written)
	require.NoError(t, err)
	full := st.file(testID)
	for n := range len(full) {
		st.put(testID, full[:n])
		snap, err := persist.Load(t.Context(), st, testID, textCodec{})
		var r *persist.Refused
		require.ErrorAs(t, err, &r, "cut at %d of %d", n, len(full))
		require.Nil(t, snap)
		require.True(t, strings.HasPrefix(r.Reason, "truncated: "), "cut at %d: %s", n, r.Reason)
	}
	st.put(testID, append(bytes.Clone(full), 0))
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "bytes after the end of the snapshot (corrupted)", r.Reason)
}

func TestEveryFlippedByteIsRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "99", items(5), written)
	require.NoError(t, err)
	full := st.file(testID)
	for i := range full {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(full)
			b[i] ^= mask
			st.put(testID, b)
			snap, err := persist.Load(t.Context(), st, testID, textCodec{})
			var r *persist.Refused
			require.ErrorAs(t, err, &r, "byte %d ^ %#x", i, mask)
			require.Nil(t, snap)
		}
	}
}

func TestFlippedBytesInALargeFileAreRefused(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "99", items(1000), written)
	require.NoError(t, err)
	full := st.file(testID)
	rng := rand.New(rand.NewPCG(33, 1))
	for range 200 {
		i := rng.IntN(len(full))
		b := bytes.Clone(full)
		b[i] ^= byte(1 + rng.IntN(255))
		st.put(testID, b)
		snap, err := persist.Load(t.Context(), st, testID, textCodec{})
		var r *persist.Refused
		require.ErrorAs(t, err, &r, "byte %d of %d", i, len(full))
		require.Nil(t, snap)
	}
}

func TestAFailedSaveKeepsTheOldSnapshot(t *testing.T) {
	dir := t.TempDir()
	st := persist.Dir(dir)
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", items(3), written)
	require.NoError(t, err)
	_, err = persist.Save(t.Context(), st, testID, textCodec{}, "2", []any{"a", 42}, written)
	require.ErrorContains(t, err, "encode item 1")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = persist.Save(ctx, st, testID, textCodec{}, "3", items(3), written)
	require.ErrorIs(t, err, context.Canceled)
	snap, err := persist.Load(t.Context(), st, testID, textCodec{})
	require.NoError(t, err)
	assert.Equal(t, "1", snap.ResourceVersion)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{persist.FileName(testID), persist.FileName(testID) + ".lock"}, names)
}

func TestAConcurrentSaveOfTheSameIdentityFails(t *testing.T) {
	st := persist.Dir(t.TempDir())
	p, err := st.Create(t.Context(), testID)
	require.NoError(t, err)
	_, err = st.Create(t.Context(), testID)
	require.ErrorContains(t, err, "another save of this snapshot is under way")
	require.NoError(t, p.Abort())
	p, err = st.Create(t.Context(), testID)
	require.NoError(t, err)
	require.NoError(t, p.Abort())
}

func TestAbortAfterCommitDoesNothing(t *testing.T) {
	st := persist.Dir(t.TempDir())
	p, err := st.Create(t.Context(), testID)
	require.NoError(t, err)
	_, err = p.Write([]byte("not a snapshot"))
	require.NoError(t, err)
	require.NoError(t, p.Commit())
	require.NoError(t, p.Abort())
	_, err = p.Write([]byte("more"))
	require.Error(t, err)
	_, err = persist.Load(t.Context(), st, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Contains(t, r.Reason, "bad magic")
}

func TestAReasonIsOneLine(t *testing.T) {
	st := newMemStore()
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", []any{"undecodable\nacross\tlines"}, written)
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), st, testID, multiLineCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "item 0 of 1 does not decode as text/plain: first line second line", r.Reason)
}

type multiLineCodec struct{ textCodec }

func (multiLineCodec) Decode([]byte) (any, error) {
	return nil, errors.New("first line\n  second line")
}

// A snapshot that cannot be read is refused like one that is wrong: the reflector starts
// without it, and the log says why.
func TestASnapshotThatCannotBeOpenedIsRefused(t *testing.T) {
	_, err := persist.Load(t.Context(), failingStore{}, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "cannot open it: input/output error", r.Reason)
}

type failingStore struct{ persist.Store }

func (failingStore) Open(context.Context, persist.Identity) (io.ReadCloser, error) {
	return nil, errors.New("input/output error")
}

// appendCodec encodes only by appending: Save must take that way when a codec offers it.
type appendCodec struct{ textCodec }

func (appendCodec) Encode(any) ([]byte, error) { panic("Save called Encode on an AppendEncoder") }
func (appendCodec) AppendEncode(dst []byte, obj any) ([]byte, error) {
	return append(dst, obj.(string)...), nil
}

func TestSaveAppendsWhenTheCodecCan(t *testing.T) {
	plain, appended := newMemStore(), newMemStore()
	_, err := persist.Save(t.Context(), plain, testID, textCodec{}, "5", items(300), written)
	require.NoError(t, err)
	_, err = persist.Save(t.Context(), appended, testID, appendCodec{}, "5", items(300), written)
	require.NoError(t, err)
	assert.Equal(t, plain.file(testID), appended.file(testID))
}

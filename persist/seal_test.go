package persist_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

func newKey(t testing.TB) persist.Key {
	t.Helper()
	var k persist.Key
	_, err := rand.Read(k[:])
	require.NoError(t, err)
	return k
}

func sealed(t testing.TB, st persist.Store, keys ...persist.Key) persist.Store {
	t.Helper()
	s, err := persist.Sealed(st, keys...)
	require.NoError(t, err)
	return s
}

// The layout of a sealed snapshot (persist/seal.go): the header, then chunks of 64 KiB of
// plaintext and 16 bytes of tag each.
const (
	sealHeader = 86
	sealChunk  = 64<<10 + 16
)

// bigItems is a snapshot of several chunks: about 330 KB.
func bigItems() []any {
	out := make([]any, 3000)
	for i := range out {
		out[i] = fmt.Sprintf("object %04d %s", i, strings.Repeat("secret-data ", 8))
	}
	return out
}

// loadReason loads b as testID's sealed snapshot with keys and returns the refusal's reason.
func loadReason(t *testing.T, b []byte, keys ...persist.Key) string {
	t.Helper()
	st := newMemStore()
	st.put(testID, b)
	snap, err := persist.Load(t.Context(), sealed(t, st, keys...), testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r, "loaded %v", snap)
	require.Nil(t, snap)
	require.NotContains(t, r.Reason, "\n")
	return r.Reason
}

// A sealed snapshot loads back whole with its key, through a directory and through any store,
// and its bytes hold none of the objects' (docs/semantics.md, "Persisted cache", "Sealed").
func TestASealedSnapshotRoundTripsAndHidesItsObjects(t *testing.T) {
	k := newKey(t)
	for _, n := range []int{0, 1, 3000} {
		objs := items(n)
		if n == 3000 {
			objs = bigItems()
		}
		dir := t.TempDir()
		for name, under := range map[string]persist.Store{"dir": persist.Dir(dir), "memory": newMemStore()} {
			t.Run(fmt.Sprint(name, n), func(t *testing.T) {
				st := sealed(t, under, k)
				stats, err := persist.Save(t.Context(), st, testID, textCodec{}, "1234567", objs, written)
				require.NoError(t, err)
				assert.Equal(t, n, stats.Count)
				snap, err := persist.Load(t.Context(), st, testID, textCodec{})
				require.NoError(t, err)
				assert.Equal(t, objs, snap.Items)
				assert.Equal(t, "1234567", snap.ResourceVersion)
				assert.Equal(t, testID, snap.Identity)
			})
		}
		raw, err := os.ReadFile(filepath.Join(dir, persist.FileName(testID)))
		require.NoError(t, err)
		assert.True(t, bytes.HasPrefix(raw, []byte("\x89RWSEAL\n\x00\x01")), "sealed magic and version")
		for _, clear := range []string{"secret-data", "object", testID.Resource, testID.Server, "1234567", "text/plain"} {
			assert.False(t, bytes.Contains(raw, []byte(clear)), "the sealed file holds %q in clear", clear)
		}
	}
}

// The chunk size is what lets a sealed snapshot stream: saving 3,000 objects through the seal
// allocates a chunk's buffers, not the snapshot.
func TestSealingStreams(t *testing.T) {
	st := sealed(t, discardStore{}, newKey(t))
	objs := make([]any, 20000)
	for i := range objs {
		objs[i] = strings.Repeat("x", 1000)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stats, err := persist.Save(t.Context(), st, testID, textCodec{}, "1", objs, written)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Greater(t, stats.Bytes, int64(20e6))
	// textCodec allocates each item's bytes (1 KB × 20,000); the rest is buffers.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(20000*1024+2<<20), "bytes allocated to seal a 20 MB snapshot")
}

// discardStore keeps nothing.
type discardStore struct{}

func (discardStore) Open(context.Context, persist.Identity) (io.ReadCloser, error) {
	return nil, persist.ErrNotFound
}
func (discardStore) Create(context.Context, persist.Identity) (persist.Pending, error) {
	return discardPending{}, nil
}

type discardPending struct{}

func (discardPending) Write(b []byte) (int, error) { return len(b), nil }
func (discardPending) Commit() error               { return nil }
func (discardPending) Abort() error                { return nil }

// Key rotation: the first key seals, every key opens; once re-saved, the old key can go.
func TestKeyRotation(t *testing.T) {
	oldKey, newKeyV := newKey(t), newKey(t)
	under := newMemStore()
	_, err := persist.Save(t.Context(), sealed(t, under, oldKey), testID, textCodec{}, "10", items(5), written)
	require.NoError(t, err)

	rotated := sealed(t, under, newKeyV, oldKey)
	snap, err := persist.Load(t.Context(), rotated, testID, textCodec{})
	require.NoError(t, err, "the old key still opens what it sealed")
	assert.Equal(t, items(5), snap.Items)
	assert.Contains(t, loadReason(t, under.file(testID), newKeyV), "sealed with key "+oldKey.ID()+", which is not one of this store's keys ("+newKeyV.ID()+")")

	_, err = persist.Save(t.Context(), rotated, testID, textCodec{}, "11", items(6), written)
	require.NoError(t, err)
	snap, err = persist.Load(t.Context(), sealed(t, under, newKeyV), testID, textCodec{})
	require.NoError(t, err, "what was saved after the rotation needs only the new key")
	assert.Equal(t, "11", snap.ResourceVersion)
	assert.Contains(t, loadReason(t, under.file(testID), oldKey), "sealed with key "+newKeyV.ID())
}

// A sealed snapshot read without keys, and one in clear read by a sealed store, are refused:
// the first cannot be read, the second may be anyone's.
func TestSealedAndClearDoNotMix(t *testing.T) {
	k := newKey(t)
	under := newMemStore()
	_, err := persist.Save(t.Context(), sealed(t, under, k), testID, textCodec{}, "1", items(3), written)
	require.NoError(t, err)
	_, err = persist.Load(t.Context(), under, testID, textCodec{})
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "sealed: it is read with the keys that sealed it (persist.Sealed), and this store has none", r.Reason)

	clear := newMemStore()
	_, err = persist.Save(t.Context(), clear, testID, textCodec{}, "1", items(3), written)
	require.NoError(t, err)
	assert.Equal(t, "not sealed: this store loads sealed snapshots only, and one in clear may have been put there by anyone who can write there",
		loadReason(t, clear.file(testID), k))

	_, err = persist.Load(t.Context(), sealed(t, newMemStore(), k), testID, textCodec{})
	assert.ErrorIs(t, err, persist.ErrNotFound, "no snapshot is no snapshot, sealed or not")
}

// Every change to a sealed snapshot is refused with a reason that says what it looks like:
// truncation (anywhere, a chunk's end included), a flipped byte anywhere, chunks swapped,
// dropped or repeated, a chunk of another snapshot, another identity's header, bytes after
// the end.
func TestEveryChangeToASealedSnapshotIsRefused(t *testing.T) {
	k := newKey(t)
	under := newMemStore()
	st := sealed(t, under, k)
	_, err := persist.Save(t.Context(), st, testID, textCodec{}, "5", bigItems(), written)
	require.NoError(t, err)
	b := under.file(testID)
	chunks := (len(b) - sealHeader + sealChunk - 1) / sealChunk
	require.GreaterOrEqual(t, chunks, 4, "the snapshot spans several chunks")
	chunk := func(i int) []byte { return b[sealHeader+i*sealChunk : min(len(b), sealHeader+(i+1)*sealChunk)] }
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	header := b[:sealHeader]

	// Another snapshot of the same identity, key and size: its chunks are not this one's.
	other := newMemStore()
	_, err = persist.Save(t.Context(), sealed(t, other, k), testID, textCodec{}, "5", bigItems(), written)
	require.NoError(t, err)
	ob := other.file(testID)
	otherChunk := ob[sealHeader+sealChunk : sealHeader+2*sealChunk]

	// Another identity's snapshot, sealed with the same key.
	otherID := testID
	otherID.Namespace = "other"
	_, err = persist.Save(t.Context(), sealed(t, other, k), otherID, textCodec{}, "5", bigItems(), written)
	require.NoError(t, err)
	oid := other.file(otherID)

	cases := map[string]struct {
		b      []byte
		reason string
	}{
		"cut in the header":          {b[:40], "truncated: the sealed snapshot ends in its header"},
		"cut after the header":       {header, "truncated: the sealed snapshot has no chunk"},
		"cut at a chunk's end":       {b[:sealHeader+2*sealChunk], "truncated: the sealed snapshot ends after chunk 1, which is not its last"},
		"cut inside a chunk":         {b[:sealHeader+2*sealChunk+100], "chunk 2 fails authentication: tampered with, or not this snapshot's"},
		"cut before the last chunk":  {b[:sealHeader+(chunks-1)*sealChunk], fmt.Sprintf("truncated: the sealed snapshot ends after chunk %d, which is not its last", chunks-2)},
		"last byte dropped":          {b[:len(b)-1], fmt.Sprintf("chunk %d fails authentication: tampered with, or not this snapshot's", chunks-1)},
		"bytes after the end":        {join(b, []byte{0}), fmt.Sprintf("chunk %d fails authentication: tampered with, or not this snapshot's", chunks-1)},
		"chunks 0 and 1 swapped":     {join(header, chunk(1), chunk(0), b[sealHeader+2*sealChunk:]), "chunk 0 fails authentication: tampered with, or not this snapshot's"},
		"chunk 1 dropped":            {join(header, chunk(0), b[sealHeader+2*sealChunk:]), "chunk 1 fails authentication: tampered with, or not this snapshot's"},
		"chunk 0 repeated":           {join(header, chunk(0), b[sealHeader:]), "chunk 1 fails authentication: tampered with, or not this snapshot's"},
		"another snapshot's chunk 1": {join(header, chunk(0), otherChunk, b[sealHeader+2*sealChunk:]), "chunk 1 fails authentication: tampered with, or not this snapshot's"},
		"another snapshot's header":  {join(ob[:sealHeader], b[sealHeader:]), "chunk 0 fails authentication: tampered with, or not this snapshot's"},
		"another identity's header":  {join(oid[:sealHeader], b[sealHeader:]), "sealed for another identity than " + testID.String()},
		"another identity's file":    {oid, "sealed for another identity than " + testID.String()},
		"another format version":     {join(header[:9], []byte{2}, b[10:]), "sealed format version 2, this build reads 1"},
		"a chunk size of 2 MiB":      {join(header[:82], []byte{0, 0x20, 0, 0}, b[86:]), "sealed chunks of 2097152 bytes, not between 1 and 1048576 (corrupted)"},
		"a chunk size of 32 KiB":     {join(header[:82], []byte{0, 0, 0x80, 0}, b[86:]), "chunk 0 fails authentication: tampered with, or not this snapshot's"},
		"another salt":               {join(header[:50], bytes.Repeat([]byte{7}, 32), b[82:]), "chunk 0 fails authentication: tampered with, or not this snapshot's"},
		"not a snapshot":             {bytes.Repeat([]byte("garbage!"), 20), `not a sealed rewatch snapshot (bad magic "garbage!")`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.reason, loadReason(t, c.b, k))
		})
	}
	// A byte flipped anywhere: every byte of the header, and bytes throughout the chunks.
	for i := 0; i < len(b); i += 1 + i/7 {
		flipped := bytes.Clone(b)
		flipped[i] ^= 0x20
		reason := loadReason(t, flipped, k)
		require.NotEmpty(t, reason, "byte %d", i)
	}
}

// Another key, or none of the keys a snapshot was sealed with, is refused naming both.
func TestAnotherKeyIsRefused(t *testing.T) {
	a, b := newKey(t), newKey(t)
	under := newMemStore()
	_, err := persist.Save(t.Context(), sealed(t, under, a), testID, textCodec{}, "5", items(10), written)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("sealed with key %s, which is not one of this store's keys (%s)", a.ID(), b.ID()), loadReason(t, under.file(testID), b))

	// A header that names this store's key over chunks sealed with another: the key id is only
	// a name, the chunks are what is checked.
	file := bytes.Clone(under.file(testID))
	bid, _ := hex.DecodeString(b.ID())
	copy(file[10:18], bid)
	assert.Equal(t, "chunk 0 fails authentication: tampered with, or not this snapshot's", loadReason(t, file, b))
}

func TestParseKeys(t *testing.T) {
	k1, k2 := newKey(t), newKey(t)
	text := "# rotated 2026-12-06\n" + base64.StdEncoding.EncodeToString(k1[:]) + "\n\n  " + hex.EncodeToString(k2[:]) + "  \n"
	keys, err := persist.ParseKeys([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, []persist.Key{k1, k2}, keys)

	for in, want := range map[string]string{
		"":                 "persist: no key (one a line, base64 or hex of 32 bytes)",
		"# only\n":         "persist: no key (one a line, base64 or hex of 32 bytes)",
		"c2hvcnQ=":         "persist: key on line 1: 5 bytes, not 32",
		"not a key at all": "persist: key on line 1: neither base64 nor hex of 32 bytes",
		base64.StdEncoding.EncodeToString(k1[:]) + "\n" + hex.EncodeToString(k1[:]): "persist: key on line 2 is the key on line 1 again",
	} {
		_, err := persist.ParseKeys([]byte(in))
		assert.EqualError(t, err, want, "%q", in)
	}
	// Neither the key nor its text shows in what is printed of it.
	s := fmt.Sprintf("%v %s %#v %+v", k1, k1, k1, []persist.Key{k1})
	assert.NotContains(t, s, base64.StdEncoding.EncodeToString(k1[:])[:8])
	assert.NotContains(t, s, hex.EncodeToString(k1[:])[:8])
	assert.Contains(t, s, k1.ID())

	path := filepath.Join(t.TempDir(), "keys")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	keys, err = persist.ReadKeyFile(path)
	require.NoError(t, err)
	assert.Equal(t, []persist.Key{k1, k2}, keys)
	_, err = persist.ReadKeyFile(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorContains(t, err, "no such file")
}

func TestSealedRefusesBadKeys(t *testing.T) {
	k := newKey(t)
	for name, keys := range map[string][]persist.Key{"none": nil, "zero": {{}}, "twice": {k, k}} {
		_, err := persist.Sealed(newMemStore(), keys...)
		assert.Error(t, err, name)
	}
	_, err := persist.Sealed(nil, k)
	assert.Error(t, err)
}

// A sealed store tells the store under it what it writes when that store keeps the newest
// (persist.OrderedStore), and a superseded save succeeds without writing.
func TestSealedPassesOrderingThrough(t *testing.T) {
	under := &orderedMemStore{memStore: newMemStore(), held: "100"}
	st := sealed(t, under, newKey(t))
	stats, err := persist.Save(t.Context(), st, testID, textCodec{}, "90", items(3), written)
	require.NoError(t, err)
	assert.True(t, stats.Superseded)
	assert.Equal(t, []string{"90"}, under.asked)
	assert.Nil(t, under.file(testID), "nothing written")

	stats, err = persist.Save(t.Context(), st, testID, textCodec{}, "110", items(3), written)
	require.NoError(t, err)
	assert.False(t, stats.Superseded)
	assert.NotNil(t, under.file(testID))
}

// orderedMemStore holds a snapshot at rv held, and supersedes every offer not past it.
type orderedMemStore struct {
	*memStore
	held  string
	asked []string
}

func (o *orderedMemStore) CreateFor(ctx context.Context, id persist.Identity, info persist.SnapshotInfo) (persist.Pending, error) {
	o.asked = append(o.asked, info.ResourceVersion)
	if len(info.ResourceVersion) < len(o.held) || (len(info.ResourceVersion) == len(o.held) && info.ResourceVersion <= o.held) {
		return nil, persist.ErrSuperseded
	}
	return o.memStore.Create(ctx, id)
}

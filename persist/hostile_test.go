package persist_test

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

// craft writes a snapshot file by hand with checksums that hold, so that what it claims is
// read past them: a header with count, then body; the file checksum follows when sum is set.
func craft(t *testing.T, count int64, body []byte, sum bool) []byte {
	h, err := json.Marshal(map[string]any{"identity": testID, "resourceVersion": "1", "written": written,
		"mediaType": "text/plain", "count": count})
	require.NoError(t, err)
	crc := crc32.MakeTable(crc32.Castagnoli)
	b := append([]byte("\x89RWSNAP\n"), 0, 1)
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	b = append(b, h...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc))
	b = append(b, body...)
	if sum {
		b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc))
	}
	return b
}

// loadAllocs loads b and says what it cost in bytes allocated.
func loadAllocs(t *testing.T, b []byte) (*persist.Refused, uint64) {
	st := newMemStore()
	st.put(testID, b)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := persist.Load(t.Context(), st, testID, textCodec{})
	runtime.ReadMemStats(&after)
	var r *persist.Refused
	require.ErrorAs(t, err, &r)
	return r, after.TotalAlloc - before.TotalAlloc
}

// A file that claims more than it holds costs what it holds, not what it claims
// (docs/semantics.md, "Persisted cache").
func TestClaimsPastTheFileCostWhatTheFileHolds(t *testing.T) {
	// A count of 2^40 items and an item of the largest length, with a few bytes behind them.
	item := binary.BigEndian.AppendUint32(nil, persist.MaxItemBytes)
	r, cost := loadAllocs(t, craft(t, 1<<40, append(item, "only this"...), false))
	assert.Equal(t, "truncated: the file ends in item 0 of 1099511627776", r.Reason)
	assert.Less(t, cost, uint64(2<<20), "bytes allocated for a file of under 300 bytes")

	// A length past the bound is refused before anything is read for it.
	r, _ = loadAllocs(t, craft(t, 1, binary.BigEndian.AppendUint32(nil, persist.MaxItemBytes+1), false))
	assert.Equal(t, "item 0 of 1 claims 67108865 bytes, more than 67108864 (corrupted)", r.Reason)

	// As is a header length past its bound, and a negative count.
	b := craft(t, 0, nil, true)
	binary.BigEndian.PutUint32(b[10:], persist.MaxHeaderBytes+1)
	r, _ = loadAllocs(t, b)
	assert.Equal(t, "header length 1048577 is more than 1048576 (corrupted)", r.Reason)
	r, _ = loadAllocs(t, craft(t, -1, nil, true))
	assert.Equal(t, "header says -1 items (corrupted)", r.Reason)

	// The hand-made file is one Load reads when it holds what it claims.
	st := newMemStore()
	st.put(testID, craft(t, 1, append(binary.BigEndian.AppendUint32(nil, 2), "ok"...), true))
	snap, err := persist.Load(t.Context(), st, testID, textCodec{})
	require.NoError(t, err)
	assert.Equal(t, []any{"ok"}, snap.Items)
}

package persist_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/persist"
)

// fuzzKey seals the fuzz target's sealed seeds.
var fuzzKey = persist.Key{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

// Load over arbitrary bytes, in clear and through a sealed store (persist.Sealed), either
// returns a whole snapshot — every item the header counts, of this identity — or refuses it;
// it never panics, never returns part of one, and never fails any other way
// (docs/semantics.md, "Persisted cache").
func FuzzLoad(f *testing.F) {
	for _, objs := range [][]any{nil, {"a"}, {"one", "two", "undecodable three"}, items(20), bigItems()[:1500]} {
		clear := newMemStore()
		sealedUnder := newMemStore()
		for _, st := range []persist.Store{clear, sealed(f, sealedUnder, fuzzKey)} {
			_, err := persist.Save(f.Context(), st, testID, textCodec{}, "42", objs, written)
			require.NoError(f, err)
		}
		for _, b := range [][]byte{clear.file(testID), sealedUnder.file(testID)} {
			f.Add(b)
			f.Add(b[:len(b)/2])
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\x89RWSNAP\n\x00\x01\xff\xff\xff\xff"))
	f.Add([]byte("\x89RWSEAL\n\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st := newMemStore()
		st.put(testID, b)
		loadWholeOrRefuse(t, st)
		loadWholeOrRefuse(t, sealed(t, st, fuzzKey))
	})
}

// loadWholeOrRefuse loads testID from st: a refusal, or a whole snapshot.
func loadWholeOrRefuse(t *testing.T, st persist.Store) {
	snap, err := persist.Load(t.Context(), st, testID, textCodec{})
	if err != nil {
		var r *persist.Refused
		require.True(t, errors.As(err, &r), "not a refusal: %v", err)
		require.Nil(t, snap)
		require.NotEmpty(t, r.Reason)
		require.NotContains(t, r.Reason, "\n")
		return
	}
	require.Equal(t, testID, snap.Identity)
	for _, it := range snap.Items {
		require.False(t, bytes.HasPrefix([]byte(it.(string)), []byte("undecodable")), "an item that does not decode was returned")
	}
	// What loads saves back to a file that loads to the same snapshot.
	again := newMemStore()
	_, err = persist.Save(t.Context(), again, testID, textCodec{}, snap.ResourceVersion, snap.Items, snap.Written)
	require.NoError(t, err)
	snap2, err := persist.Load(t.Context(), again, testID, textCodec{})
	require.NoError(t, err)
	require.Equal(t, snap.Items, snap2.Items)
	require.Equal(t, snap.ResourceVersion, snap2.ResourceVersion)
}

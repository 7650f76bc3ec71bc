package rewatch_test

import (
	"bytes"
	"context"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/driver"
	"github.com/rewatch/rewatch/journal"
	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// persisted runs a reflector of the sim's default ConfigMaps with its store persisted in dir
// until it has synced and until done says so, stops it, and returns it with its store and
// journal; the journal replays to the same decisions.
func persisted(t *testing.T, url, dir string, done func(*rewatch.Reflector, *driver.MemStore) bool, mods ...func(*rewatch.Config)) (*rewatch.Reflector, *driver.MemStore) {
	t.Helper()
	var j bytes.Buffer
	store := driver.NewMemStore()
	cfg := rewatch.Config{
		Connection: rewatch.Connection{
			Client: &http.Client{}, Server: url,
			Resource: rewatch.Resource{Version: "v1", Resource: "configmaps", Namespace: "default"},
		},
		Store: store, Journal: &j, Checked: true, Persist: persist.Dir(dir),
	}
	for _, mod := range mods {
		mod(&cfg)
	}
	r, err := rewatch.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	require.Eventually(t, func() bool { return r.HasSynced() && done(r, store) }, 10*time.Second, time.Millisecond)
	cancel()
	require.NoError(t, <-errc)
	_, err = journal.Replay(&j, journal.ReplayOptions{Check: true})
	require.NoError(t, err, "the journal replays a start from a snapshot")
	return r, store
}

// docs/semantics.md "Persisted cache", through the façade: a reflector saves its store at stop
// in the directory given; the next one restores it, probes with one item of a consistent LIST
// (the collection is larger than a page: pages of 2 here) and resumes the watch, with no LIST
// of everything; after a compaction the next one relists, decoding only the items that
// changed. Stats.Start says which way each start went.
func TestAPersistedReflectorResumesAfterARestart(t *testing.T) {
	s, url := simWithConfigMaps(t, sim.Options{}, "a", "b", "c", "d")
	dir := filepath.Join(t.TempDir(), "cache")
	matches := func(_ *rewatch.Reflector, st *driver.MemStore) bool {
		return maps.Equal(st.Versions(), s.Snapshot(sim.ConfigMaps))
	}

	pages := func(c *rewatch.Config) { c.Policy.PageSize = 2 }
	r, _ := persisted(t, url, dir, matches, pages)
	assert.Equal(t, rewatch.StartListed, r.Stats().Start.Way)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "the stop saved a snapshot")

	// "a", the probe's one item, stays as the snapshot holds it: it witnesses that the server
	// is of the snapshot's history.
	_, err = s.Update(sim.ConfigMaps, "default", "c", map[string]string{"n": "c1"})
	require.NoError(t, err)
	_, err = s.Delete(sim.ConfigMaps, "default", "b")
	require.NoError(t, err)
	r, _ = persisted(t, url, dir, matches, pages)
	st := r.Stats()
	assert.Equal(t, rewatch.StartResumed, st.Start.Way, "%s", st.Start)
	assert.Equal(t, 4, st.Start.Restored)
	assert.Equal(t, 1, st.Lists, "one LIST: the probe")
	assert.Contains(t, st.Start.String(), "no LIST")

	// The server's history moves past the snapshot: the resume is answered 410 and relists,
	// and the items the restored store holds unchanged are not decoded.
	_, err = s.Update(sim.ConfigMaps, "default", "c", map[string]string{"n": "c2"})
	require.NoError(t, err)
	s.Compact()
	r, _ = persisted(t, url, dir, matches, pages)
	st = r.Stats()
	require.Equal(t, rewatch.StartRelisted, st.Start.Way, "%s", st.Start)
	assert.Equal(t, 3, st.Start.Listed)
	assert.Equal(t, 1, st.Start.Decoded, "only c changed: %s", st.Start)
}

// A snapshot that cannot be read is refused, said in Stats, and the start lists.
func TestACorruptSnapshotIsRefused(t *testing.T) {
	s := sim.New(sim.Options{})
	url, err := s.Start()
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Create(sim.ConfigMaps, "default", "a", nil)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "cache")
	persisted(t, url, dir, func(*rewatch.Reflector, *driver.MemStore) bool { return true })
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".snap" {
			p := filepath.Join(dir, e.Name())
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)-1] ^= 0xff
			require.NoError(t, os.WriteFile(p, b, 0o600))
		}
	}
	r, _ := persisted(t, url, dir, func(*rewatch.Reflector, *driver.MemStore) bool { return true })
	st := r.Stats()
	require.Equal(t, rewatch.StartRefused, st.Start.Way)
	assert.NotEmpty(t, st.Start.Refused)
	assert.Contains(t, st.Start.String(), "snapshot refused")
	// Said once: the reason follows "snapshot refused: ", without the error's own prefix.
	assert.Equal(t, 1, strings.Count(st.Start.String(), "snapshot refused"), st.Start.String())
}

func TestPersistNeedsAStoreThatLists(t *testing.T) {
	_, err := rewatch.New(rewatch.Config{
		Connection: rewatch.Connection{Client: &http.Client{}, Server: "http://127.0.0.1:1", Resource: rewatch.Resource{Version: "v1", Resource: "configmaps"}},
		Store:      addOnly{}, Persist: persist.Dir(t.TempDir()),
	})
	require.ErrorContains(t, err, "Persist: the Store (rewatch_test.addOnly) has no List() []any")
}

// A decoder of the caller's own has no snapshot codec unless it encodes objects too: New says
// so rather than run without the snapshot asked for.
func TestPersistNeedsASnapshotCodec(t *testing.T) {
	_, err := rewatch.New(rewatch.Config{
		Connection: rewatch.Connection{Client: &http.Client{}, Server: "http://127.0.0.1:1", Resource: rewatch.Resource{Version: "v1", Resource: "configmaps"},
			Decoder: ownDecoder{}},
		Persist: persist.Dir(t.TempDir()),
	})
	require.ErrorContains(t, err, "Persist: ")
	require.ErrorIs(t, err, httpapi.ErrNoSnapshotCodec)
}

type ownDecoder struct{}

func (ownDecoder) MediaTypes() []string { return []string{httpapi.MediaJSON} }
func (ownDecoder) DecodeList(string, []byte) ([]any, string, string, error) {
	return nil, "", "", nil
}
func (ownDecoder) DecodeObject(string, []byte) (any, error) { return nil, nil }

type addOnly struct{}

func (addOnly) Add(any) error               { return nil }
func (addOnly) Update(any) error            { return nil }
func (addOnly) Delete(any) error            { return nil }
func (addOnly) Replace([]any, string) error { return nil }

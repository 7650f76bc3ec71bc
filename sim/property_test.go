package sim

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/watch"
	"pgregory.net/rapid"
)

// applyOps performs random writes on a small name space so that creates,
// updates and deletes of the same object interleave; it returns how many
// succeeded (each is exactly one event).
func applyOps(t *rapid.T, s *Server, label string) int {
	n := 0
	for range rapid.IntRange(0, 15).Draw(t, label+"-count") {
		name := fmt.Sprint("o", rapid.IntRange(0, 3).Draw(t, label+"-name"))
		var err error
		switch rapid.IntRange(0, 2).Draw(t, label+"-op") {
		case 0:
			_, err = s.Create(ConfigMaps, "ns", name, map[string]string{"v": "c"})
		case 1:
			_, err = s.Update(ConfigMaps, "ns", name, map[string]string{"v": rapid.StringN(0, 3, -1).Draw(t, "v")})
		case 2:
			_, err = s.Delete(ConfigMaps, "ns", name)
		}
		if err == nil {
			n++
		}
	}
	return n
}

// LIST at RV X (exact, paginated) plus WATCH from X reconstructs the final
// state: the contract every reflector relies on.
func TestListAtXPlusWatchFromXReconstructsState(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s := New(Options{})
		u, err := s.Start()
		require.NoError(rt, err)
		defer s.Close()
		applyOps(rt, s, "before")
		x := s.CurrentRV()
		events := applyOps(rt, s, "after")

		state := map[string]string{}
		q := url.Values{"resourceVersion": {x}, "resourceVersionMatch": {"Exact"}, "limit": {"2"}}
		for {
			l := decodeList(t, get(t, u, cmPath, q, ""))
			require.Equal(rt, x, l.Metadata.ResourceVersion)
			for _, it := range l.Items {
				state[it.Namespace+"/"+it.Name] = it.ResourceVersion
			}
			if l.Metadata.Continue == "" {
				break
			}
			q = url.Values{"continue": {l.Metadata.Continue}, "limit": {"2"}}
		}
		if events > 0 {
			w := openWatch(t, u, cmPath, url.Values{"resourceVersion": {x}})
			for range events {
				e, obj := w.mustNext()
				key := obj.GetNamespace() + "/" + obj.GetName()
				if e.Type == string(watch.Deleted) {
					delete(state, key)
				} else {
					state[key] = obj.GetResourceVersion()
				}
			}
			w.close()
		}
		require.Equal(rt, s.Snapshot(ConfigMaps), state)
	})
}

package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// FuzzSnapshotCodecDecode feeds arbitrary item bytes to each built-in snapshot codec, as a
// snapshot crafted with valid checksums would: Decode never panics, and what it accepts
// encodes to bytes that decode to the same object (docs/semantics.md, "Persisted cache").
func FuzzSnapshotCodecDecode(f *testing.F) {
	codecs := map[byte]persist.Codec{}
	for i, d := range []httpapi.Decoder{httpapi.Typed(scheme.Scheme), httpapi.Metadata(), httpapi.Unstructured()} {
		tr, err := httpapi.New(httpapi.Config{Client: &http.Client{}, Server: "https://127.0.0.1", Resource: httpapi.Resource{Version: "v1", Resource: "configmaps"}, Decoder: d})
		require.NoError(f, err)
		c, err := tr.SnapshotCodec()
		require.NoError(f, err)
		codecs[byte(i)] = c
	}
	cm := configMapList().Items[0]
	pom := pomList().Items[1]
	ws, _, _, err := httpapi.Unstructured().DecodeList(httpapi.MediaCBOR, cborWidgets(f, 1))
	require.NoError(f, err)
	for i, obj := range []any{&cm, &pom, ws[0]} {
		raw, err := codecs[byte(i)].Encode(obj)
		require.NoError(f, err)
		f.Add(byte(i), raw)
		f.Add(byte(i), raw[:len(raw)/2])
	}
	f.Add(byte(0), []byte("k8s\x00"))
	f.Fuzz(func(t *testing.T, which byte, raw []byte) {
		c := codecs[which%3]
		obj, err := c.Decode(raw)
		if err != nil {
			return
		}
		again, err := c.Encode(obj)
		require.NoError(t, err, "%T decoded, and does not encode", obj)
		back, err := c.Decode(again)
		require.NoError(t, err)
		require.True(t, apiequality.Semantic.DeepEqual(obj, back), "%#v\n%#v", obj, back)
	})
}

package httpapi_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// heldMap is a store's query over a map of namespace/name keys to "resourceVersion uid" (the
// uid and its space left out for an object without one).
func heldMap(versions map[string]string) func(namespace, name string) (rv, uid string, ok bool) {
	return func(namespace, name string) (rv, uid string, ok bool) {
		key := name
		if namespace != "" {
			key = namespace + "/" + name
		}
		v, ok := versions[key]
		rv, uid, _ = strings.Cut(v, " ")
		return rv, uid, ok
	}
}

// heldFromItems is a store holding every item of a decoded list at its resourceVersion.
func heldFromItems(t testing.TB, items []any) map[string]string {
	t.Helper()
	versions := map[string]string{}
	for _, obj := range items {
		m, err := meta.Accessor(obj)
		if err != nil {
			continue // an item without metadata is held by no store
		}
		key := m.GetName()
		if m.GetNamespace() != "" {
			key = m.GetNamespace() + "/" + key
		}
		versions[key] = m.GetResourceVersion()
		if uid := m.GetUID(); uid != "" {
			versions[key] += " " + string(uid)
		}
	}
	return versions
}

// docs/semantics.md "Relists": for a store that holds items at their resourceVersion, a LIST
// hands those over as key and resourceVersion without decoding them, in their place in the
// list; an item held at another resourceVersion, or with another uid ("Persisted cache": the
// same name at the same resourceVersion in another history), or not held, is decoded as
// without the store's query. Every decoder, JSON, protobuf and CBOR.
func TestListHeldLeavesUnchangedItemsUndecoded(t *testing.T) {
	for name, c := range map[string]struct {
		decoder, media string
		body           []byte
	}{
		"typed json":              {"typed", httpapi.MediaJSON, jsonPods(t, 5)},
		"typed json, items first": {"typed", httpapi.MediaJSON, itemsFirst(t, jsonPods(t, 5))},
		"metadata json":           {"metadata", httpapi.MediaJSON, jsonPods(t, 5)},
		"unstructured json":       {"unstructured", httpapi.MediaJSON, jsonPods(t, 5)},
		"typed protobuf":          {"typed", httpapi.MediaProtobuf, listPods(t, 5)},
		"unstructured cbor":       {"unstructured", httpapi.MediaCBOR, cborConfigMaps(t, 5)},
		"unstructured cbor, CRs":  {"unstructured", httpapi.MediaCBOR, cborWidgets(t, 5)},
	} {
		plain, _ := httpapi.DecodeListBothWaysForTest(c.decoder, c.media, c.body)
		require.NoError(t, plain.Err, name)
		versions := heldFromItems(t, plain.Items)
		keys := make([]string, len(plain.Items))
		for i, obj := range plain.Items {
			m, _ := meta.Accessor(obj)
			keys[i] = m.GetNamespace() + "/" + m.GetName()
		}
		versions[keys[1]] = "changed"
		rv2, uid2, _ := strings.Cut(versions[keys[2]], " ")
		require.NotEmpty(t, uid2, "%s: the items carry uids", name)
		versions[keys[2]] = rv2 + " another-history"
		delete(versions, keys[3])

		items, rv, cont, err := httpapi.DecodeListHeldForTest(c.decoder, c.media, c.body, heldMap(versions))
		require.NoError(t, err, name)
		require.Equal(t, plain.RV, rv, name)
		require.Equal(t, plain.Continue, cont, name)
		require.Len(t, items, len(plain.Items), name)
		for i, item := range items {
			if i == 1 || i == 2 || i == 3 {
				require.Equal(t, httpapi.HeldItemForTest{Object: plain.Items[i]}, item, "%s: item %d", name, i)
				continue
			}
			m, _ := meta.Accessor(plain.Items[i])
			require.Equal(t, httpapi.HeldItemForTest{Key: keys[i], RV: m.GetResourceVersion()}, item, "%s: item %d", name, i)
		}
	}
}

// A body cut anywhere fails the LIST for a store that holds its items exactly as it fails
// without the store's query, and an item whose metadata is not what the decode reads (a name
// that is not a string, metadata given twice) is decoded, so that it fails as before.
func TestListHeldFailsAsBefore(t *testing.T) {
	for name, c := range map[string]struct {
		decoder, media string
		body           []byte
	}{
		"json":     {"typed", httpapi.MediaJSON, jsonPods(t, 3)},
		"protobuf": {"typed", httpapi.MediaProtobuf, listPods(t, 3)},
		"cbor":     {"unstructured", httpapi.MediaCBOR, cborConfigMaps(t, 3)},
	} {
		plain, _ := httpapi.DecodeListBothWaysForTest(c.decoder, c.media, c.body)
		held := heldMap(heldFromItems(t, plain.Items))
		for cut := range len(c.body) {
			body := c.body[:cut]
			plain, _ := httpapi.DecodeListBothWaysForTest(c.decoder, c.media, body)
			_, _, _, err := httpapi.DecodeListHeldForTest(c.decoder, c.media, body, held)
			if plain.Err == nil {
				require.NoError(t, err, "%s cut at %d", name, cut)
				continue
			}
			require.EqualError(t, err, plain.Err.Error(), "%s cut at %d", name, cut)
		}
	}
	held := heldMap(map[string]string{"ns/a": "5"})
	for _, body := range []string{
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":5,"namespace":"ns","resourceVersion":"5"}}]}`,
		`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"},"metadata":{"name":""}}]}`,
		`{"kind":"NoSuchList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}]}`,
	} {
		plain, _ := httpapi.DecodeListBothWaysForTest("typed", httpapi.MediaJSON, []byte(body))
		items, _, _, err := httpapi.DecodeListHeldForTest("typed", httpapi.MediaJSON, []byte(body), held)
		if plain.Err != nil {
			require.EqualError(t, err, plain.Err.Error(), body)
			continue
		}
		require.NoError(t, err, body)
		require.Len(t, items, 1)
		require.NotNil(t, items[0].Object, "an item whose metadata the scan cannot vouch for is decoded: %s", body)
	}
}

// A watch-list's initial ADDED events the store holds unchanged come without an object, JSON
// and protobuf; a changed one is decoded; after the bookmark that ends the initial state, the
// watch's own ADDED events are always decoded.
func TestWatchHeldSkipsOnlyTheInitialState(t *testing.T) {
	cm := func(name, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}, Data: map[string]string{"k": "v"}}
	}
	end := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	events := []struct {
		typ string
		obj runtime.Object
	}{{"ADDED", cm("a", "5")}, {"ADDED", cm("b", "7")}, {"BOOKMARK", end}, {"ADDED", cm("a", "5")}}
	held := heldMap(map[string]string{"ns/a": "5", "ns/b": "6"})
	for _, media := range []string{httpapi.MediaJSON, httpapi.MediaProtobuf} {
		var body bytes.Buffer
		for _, e := range events {
			if media == httpapi.MediaJSON {
				body.WriteString(`{"type":"` + e.typ + `","object":`)
				raw, err := json.Marshal(e.obj)
				require.NoError(t, err)
				body.Write(raw)
				body.WriteString("}\n")
				continue
			}
			frame, err := (&metav1.WatchEvent{Type: e.typ, Object: runtime.RawExtension{Raw: encodeProtobuf(t, e.obj)}}).Marshal()
			require.NoError(t, err)
			body.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
			body.Write(frame)
		}
		var got []fsm.Event
		httpapi.DecodeStreamHeldForTest(media, io.NopCloser(&body), held, func(e fsm.Event) bool {
			got = append(got, e)
			return true
		})
		require.Len(t, got, 5, media)
		require.Equal(t, fsm.Event{Kind: fsm.EvWatchEvent, Request: 1, Type: fsm.Added, Key: "ns/a", ResourceVersion: "5"}, got[0], media)
		require.Equal(t, "ns/b", got[1].Key, media)
		require.Equal(t, "7", got[1].Object.(*corev1.ConfigMap).ResourceVersion, media)
		require.True(t, got[2].InitialEventsEnd, media)
		require.Equal(t, "ns/a", got[3].Key, media)
		require.NotNil(t, got[3].Object, media)
		require.Equal(t, fsm.EvWatchEnded, got[4].Kind, media)
	}
}

// A watch frame's object is decoded straight from the frame for the built-in decoders, JSON
// and protobuf, and the events are exactly those of decoding each frame into a WatchEvent
// first — including the frames the scan leaves to that decode (an escaped type, a null
// object, a repeated field, an unknown type) — with fewer allocations.
func TestWatchFramesDecodedOnce(t *testing.T) {
	obj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"},"data":{"k":"v"}}`
	jsonStream := []byte(`{"type":"ADDED","object":` + obj + "}\n" +
		`{"object":` + obj + `,"type":"MODIFIED"}` + "\n" +
		`{"type":"DEL\u0045TED","object":` + obj + "}\n" +
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}` + "\n" +
		`{"type":"ADDED","object":null}` + "\n")
	var pb bytes.Buffer
	for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
		frame, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: encodeProtobuf(t, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5"}, Data: map[string]string{"k": "v"}})}}).Marshal()
		require.NoError(t, err)
		pb.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
		pb.Write(frame)
	}
	for name, c := range map[string]struct {
		media   string
		decoder httpapi.Decoder
		body    []byte
	}{
		"json typed":        {httpapi.MediaJSON, httpapi.Typed(scheme.Scheme), jsonStream},
		"json unstructured": {httpapi.MediaJSON, httpapi.Unstructured(), jsonStream},
		"json metadata":     {httpapi.MediaJSON, httpapi.Metadata(), jsonStream},
		"json unknown type": {httpapi.MediaJSON, httpapi.Typed(scheme.Scheme), []byte(`{"type":"ADDEDX","object":` + obj + "}\n")},
		"json type twice":   {httpapi.MediaJSON, httpapi.Typed(scheme.Scheme), []byte(`{"type":"ADDED","type":"DELETED","object":` + obj + "}\n")},
		"protobuf typed":    {httpapi.MediaProtobuf, httpapi.Typed(scheme.Scheme), pb.Bytes()},
		"protobuf metadata": {httpapi.MediaProtobuf, httpapi.Metadata(), pb.Bytes()},
	} {
		decode := func(d httpapi.Decoder) []fsm.Event {
			var out []fsm.Event
			httpapi.DecodeStreamWithForTest(c.media, d, io.NopCloser(bytes.NewReader(c.body)), 1<<20, func(e fsm.Event) bool {
				out = append(out, e)
				return true
			})
			return out
		}
		once, twice := decode(c.decoder), decode(ownDecoder{c.decoder})
		require.Equal(t, twice, once, name)
		require.NotEmpty(t, once, name)
		if name == "json typed" || name == "protobuf typed" {
			require.Greater(t, len(once), 2, name)
			require.NotNil(t, once[0].Object, name)
			require.Less(t, testing.AllocsPerRun(20, func() { decode(c.decoder) }), testing.AllocsPerRun(20, func() { decode(ownDecoder{c.decoder}) }), name)
		}
	}
}

// The same for a CBOR watch-list, read as unstructured objects: a CBOR sequence of WatchEvents
// whose objects are embedded, as kube-apiserver writes them with CBOR serving on.
func TestWatchHeldSkipsOnlyTheInitialStateCBOR(t *testing.T) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	info := cbor.NewSerializerInfo(s, s)
	cm := func(name, rv string, annotations map[string]any) []byte {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv}, "data": map[string]any{"k": "v"}}}
		if annotations != nil {
			u.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		var b bytes.Buffer
		require.NoError(t, info.Serializer.Encode(u, &b))
		return b.Bytes()
	}
	var body bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&body), info.StreamSerializer.Serializer)
	for _, e := range []metav1.WatchEvent{
		{Type: "ADDED", Object: runtime.RawExtension{Raw: cm("a", "5", nil)}},
		{Type: "ADDED", Object: runtime.RawExtension{Raw: cm("b", "7", nil)}},
		{Type: "BOOKMARK", Object: runtime.RawExtension{Raw: cm("", "9", map[string]any{})}},
		{Type: "ADDED", Object: runtime.RawExtension{Raw: cm("a", "5", nil)}},
	} {
		require.NoError(t, enc.Encode(&e))
	}
	held := heldMap(map[string]string{"ns/a": "5", "ns/b": "6"})
	var got []fsm.Event
	httpapi.DecodeStreamHeldWithForTest(httpapi.MediaCBOR, httpapi.Unstructured(), io.NopCloser(&body), held, func(e fsm.Event) bool {
		got = append(got, e)
		return true
	})
	require.Len(t, got, 5)
	require.Equal(t, fsm.Event{Kind: fsm.EvWatchEvent, Request: 1, Type: fsm.Added, Key: "ns/a", ResourceVersion: "5"}, got[0])
	require.Equal(t, "ns/b", got[1].Key)
	require.Equal(t, "7", got[1].Object.(*unstructured.Unstructured).GetResourceVersion())
	require.True(t, got[2].InitialEventsEnd)
	require.Equal(t, "ns/a", got[3].Key)
	require.NotNil(t, got[3].Object)
	require.Equal(t, fsm.EvWatchEnded, got[4].Kind)
	require.Nil(t, got[4].Failure)
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// jsonPods is a PodList as kube-apiserver writes it in JSON: kind, apiVersion and metadata
// before the items, and items without kind or apiVersion of their own.
func jsonPods(t testing.TB, n int) []byte {
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"metadata":{"name":"web-%d","namespace":"prod","resourceVersion":"%d","uid":"uid-web-%d","labels":{"app":"web"}},`+
			`"spec":{"containers":[{"name":"web","image":"web:v1","resources":{"limits":{"cpu":"500m"}}}]},"status":{"phase":"Running","podIP":"10.0.0.1"}}`, i, 100+i, i))
	}
	return []byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"4711","continue":"token-2"},"items":[` + strings.Join(items, ",") + `]}`)
}

// itemsFirst moves a JSON list's items before its kind, apiVersion and metadata, an order
// kube-apiserver does not write but another server may.
func itemsFirst(t testing.TB, body []byte) []byte {
	var l struct {
		Kind       string            `json:"kind"`
		APIVersion string            `json:"apiVersion"`
		Metadata   json.RawMessage   `json:"metadata"`
		Items      []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &l))
	items, err := json.Marshal(l.Items)
	require.NoError(t, err)
	return []byte(fmt.Sprintf(`{"items":%s,"metadata":%s,"apiVersion":%q,"kind":%q}`, items, l.Metadata, l.APIVersion, l.Kind))
}

// A JSON LIST read item by item from the stream gives exactly what decoding the whole body
// does, for every decoder, in kube-apiserver's field order and with the items first.
func TestJSONListStreamedEqualsWhole(t *testing.T) {
	for _, decoder := range []string{"typed", "metadata", "unstructured"} {
		for _, n := range []int{0, 1, 5} {
			for order, body := range map[string][]byte{"server order": jsonPods(t, n), "items first": itemsFirst(t, jsonPods(t, n))} {
				streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaJSON, body)
				require.NoError(t, whole.Err, "%s %d %s", decoder, n, order)
				require.NoError(t, streamed.Err, "%s %d %s", decoder, n, order)
				require.Equal(t, whole, streamed, "%s %d %s", decoder, n, order)
				require.Equal(t, "4711", streamed.RV)
				require.Equal(t, "token-2", streamed.Continue)
				require.Len(t, streamed.Items, n)
			}
		}
	}
	streamed, _ := httpapi.DecodeListBothWaysForTest("typed", httpapi.MediaJSON, jsonPods(t, 2))
	require.IsType(t, &corev1.Pod{}, streamed.Items[0])
	require.NotSame(t, streamed.Items[0], streamed.Items[1])
}

// The protobuf stream decode gives what the whole-list decode gives, metadata-only lists too.
func TestProtobufListStreamedEqualsWhole(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		streamed, whole := httpapi.DecodeListBothWaysForTest("typed", httpapi.MediaProtobuf, listPods(t, n))
		require.NoError(t, streamed.Err)
		require.Equal(t, whole, streamed)
		require.Len(t, streamed.Items, n)
	}
}

// Every cut of a LIST body fails or, where the whole decode accepts the cut body, gives the
// same result; nothing panics.
func TestListStreamCutBodies(t *testing.T) {
	for name, c := range map[string]struct {
		decoder, media string
		body           []byte
	}{
		"json typed":        {"typed", httpapi.MediaJSON, jsonPods(t, 3)},
		"json unstructured": {"unstructured", httpapi.MediaJSON, jsonPods(t, 3)},
		"json metadata":     {"metadata", httpapi.MediaJSON, jsonPods(t, 3)},
		"protobuf typed":    {"typed", httpapi.MediaProtobuf, listPods(t, 3)},
	} {
		for cut := range len(c.body) {
			streamed, whole := httpapi.DecodeListBothWaysForTest(c.decoder, c.media, c.body[:cut])
			if whole.Err == nil {
				require.NoError(t, streamed.Err, "%s cut at %d", name, cut)
				require.Equal(t, whole, streamed, "%s cut at %d", name, cut)
			} else {
				require.Error(t, streamed.Err, "%s cut at %d", name, cut)
			}
		}
	}
}

// Malformed bodies are refused with an error that says where: an item of the wrong shape, a
// list that is not an object, data after the list, a list of a kind the scheme does not know.
func TestJSONListMalformed(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"item not an object": {`{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"a"}},7]}`, "item 1"},
		"items not an array": {`{"kind":"PodList","apiVersion":"v1","items":{"a":1}}`, `field "items"`},
		"not an object":      {`["kind"]`, "not a JSON object"},
		"data after":         {`{"kind":"PodList","apiVersion":"v1","items":[]} {}`, "data after the list"},
		"unknown kind":       {`{"kind":"GizmoList","apiVersion":"v1","items":[{}]}`, "GizmoList"},
		"bad metadata":       {`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":7},"items":[]}`, `field "metadata"`},
	} {
		_, _, err := httpapi.Typed(scheme.Scheme).(httpapi.ListStreamDecoder).DecodeListStream(httpapi.MediaJSON, strings.NewReader(c.body), func(any) error { return nil })
		require.ErrorContains(t, err, c.want, name)
	}
}

// Items are handed over while the body is still arriving: the decoder holds one item, not the
// body. The body is written through a pipe, one item at a time, and each item must have been
// decoded before the next one is written.
func TestListStreamHandsItemsOverAsTheyArrive(t *testing.T) {
	for name, c := range map[string]struct {
		media string
		body  []byte
	}{
		"json":     {httpapi.MediaJSON, jsonPods(t, 50)},
		"protobuf": {httpapi.MediaProtobuf, listPods(t, 50)},
	} {
		t.Run(name, func(t *testing.T) {
			r, w := io.Pipe()
			got := make(chan string, 1)
			done := make(chan error, 1)
			go func() {
				_, _, err := httpapi.Typed(scheme.Scheme).(httpapi.ListStreamDecoder).DecodeListStream(c.media, r, func(obj any) error {
					got <- obj.(*corev1.Pod).Name
					return nil
				})
				done <- err
			}()
			// Write the body in 64-byte pieces; by the time half of it is written, items of the
			// first half must have come out, while the rest is not yet written.
			half := len(c.body) / 2
			seen := 0
			for off := 0; off < len(c.body); off += 64 {
				end := min(off+64, len(c.body))
				_, err := w.Write(c.body[off:end])
				require.NoError(t, err)
			drain:
				for {
					select {
					case <-got:
						seen++
					default:
						break drain
					}
				}
				if end >= half && end < half+64 {
					require.Positive(t, seen, "no item decoded after half the body")
				}
			}
			require.NoError(t, w.Close())
			for seen < 50 {
				<-got
				seen++
			}
			require.NoError(t, <-done)
		})
	}
}

// An error from the item callback stops the decode and is returned as it is.
func TestListStreamItemErrorStops(t *testing.T) {
	stop := fmt.Errorf("store refused")
	for _, c := range []struct {
		media string
		body  []byte
	}{{httpapi.MediaJSON, jsonPods(t, 3)}, {httpapi.MediaProtobuf, listPods(t, 3)}} {
		calls := 0
		_, _, err := httpapi.Typed(scheme.Scheme).(httpapi.ListStreamDecoder).DecodeListStream(c.media, strings.NewReader(string(c.body)), func(any) error {
			calls++
			return stop
		})
		require.ErrorIs(t, err, stop, c.media)
		require.Equal(t, 1, calls, c.media)
	}
}

// FuzzJSONList holds the streamed JSON decode of arbitrary bodies to the whole-body decode,
// for every decoder: wherever the latter succeeds, the former gives the same result.
func FuzzJSONList(f *testing.F) {
	body := jsonPods(f, 2)
	for _, seed := range [][]byte{body, itemsFirst(f, body), body[:len(body)/2], []byte(`{"kind":"PodList","apiVersion":"v1","items":null}`),
		[]byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[{"data":{"a":"b"},"metadata":{"name":"x"}}]}`), {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decoder := range []string{"typed", "metadata", "unstructured"} {
			streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaJSON, body)
			if whole.Err == nil && streamed.Err == nil {
				require.Equal(t, whole, streamed, decoder)
			}
			checkHeldList(t, decoder, httpapi.MediaJSON, body, streamed)
		}
	})
}

// FuzzProtobufListStream does the same for protobuf bodies, decoded typed.
func FuzzProtobufListStream(f *testing.F) {
	body := listPods(f, 2)
	status := encodeProtobuf(f, &metav1.Status{Status: metav1.StatusFailure, Code: 500})
	for _, seed := range [][]byte{body, body[:len(body)/2], body[:4], status, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		streamed, whole := httpapi.DecodeListBothWaysForTest("typed", httpapi.MediaProtobuf, body)
		if whole.Err == nil && streamed.Err == nil {
			require.Equal(t, whole, streamed)
		}
		checkHeldList(t, "typed", httpapi.MediaProtobuf, body, streamed)
	})
}

// checkHeldList decodes body for a store that holds every item the plain streamed decode gave
// at its resourceVersion: wherever that decode succeeded, this one does too, with the same
// list, each item either the same object or left undecoded with that object's key and
// resourceVersion.
func checkHeldList(t *testing.T, decoder, media string, body []byte, plain httpapi.ListResultForTest) {
	t.Helper()
	if plain.Err != nil {
		return
	}
	items, rv, cont, err := httpapi.DecodeListHeldForTest(decoder, media, body, heldMap(heldFromItems(t, plain.Items)))
	require.NoError(t, err, decoder)
	require.Equal(t, plain.RV, rv, decoder)
	require.Equal(t, plain.Continue, cont, decoder)
	require.Len(t, items, len(plain.Items), decoder)
	for i, item := range items {
		if item.Object != nil {
			require.Equal(t, plain.Items[i], item.Object, decoder)
			continue
		}
		m, err := meta.Accessor(plain.Items[i])
		require.NoError(t, err, decoder)
		key := m.GetName()
		if m.GetNamespace() != "" {
			key = m.GetNamespace() + "/" + key
		}
		require.Equal(t, httpapi.HeldItemForTest{Key: key, RV: m.GetResourceVersion()}, item, decoder)
	}
}

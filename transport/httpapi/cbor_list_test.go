package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rewatch/rewatch/transport/httpapi"
)

// cborEncode encodes obj as kube-apiserver does with its CBORServingAndStorage gate on: the
// self-described tag, then map keys (and struct fields) in bytewise order, so that a list's
// "items" come before its "apiVersion".
func cborEncode(t testing.TB, obj runtime.Object) []byte {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	require.NoError(t, corev1.AddToScheme(s))
	var b bytes.Buffer
	require.NoError(t, cbor.NewSerializer(s, s).Encode(obj, &b))
	return b.Bytes()
}

// cborConfigMaps is a ConfigMapList of a built-in type: its items carry no kind or apiVersion.
func cborConfigMaps(t testing.TB, n int) []byte {
	l := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{Kind: "ConfigMapList", APIVersion: "v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: "4711", Continue: "token-2"}, Items: []corev1.ConfigMap{}}
	for i := range n {
		l.Items = append(l.Items, corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i), Namespace: "prod", ResourceVersion: fmt.Sprint(100 + i), UID: types.UID(fmt.Sprintf("uid-cm-%d", i)), Labels: map[string]string{"app": "web"}},
			Data:       map[string]string{"key": strings.Repeat("v", 30+i)},
		})
	}
	return cborEncode(t, l)
}

// cborWidgets is a list of a custom resource: every item carries its own kind and apiVersion.
func cborWidgets(t testing.TB, n int) []byte {
	l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "demo.rewatch.dev/v1", "kind": "WidgetList",
		"metadata": map[string]any{"resourceVersion": "4711", "continue": "token-2"}}}
	for i := range n {
		l.Items = append(l.Items, unstructured.Unstructured{Object: map[string]any{"apiVersion": "demo.rewatch.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w-%d", i), "namespace": "default", "resourceVersion": fmt.Sprint(100 + i), "uid": fmt.Sprintf("uid-w-%d", i)},
			"spec":     map[string]any{"size": int64(i), "ratio": 0.5, "tags": []any{"a", nil, true}}}})
	}
	return cborEncode(t, l)
}

// A CBOR LIST read item by item from the stream gives exactly what apimachinery's decode of
// the whole body gives, for a built-in type (items without kind and apiVersion, which come
// after them) and a custom resource, whether or not the decoder knows the apiVersion it asked
// for (without it, items wait for the list's apiVersion).
func TestCBORListStreamedEqualsWhole(t *testing.T) {
	for _, decoder := range []string{"unstructured", "unstructured-v1"} {
		for _, n := range []int{0, 1, 5} {
			for kind, body := range map[string][]byte{"configmaps": cborConfigMaps(t, n), "widgets": cborWidgets(t, n)} {
				if kind == "widgets" && decoder == "unstructured-v1" {
					continue // a transport for widgets asks for demo.rewatch.dev/v1
				}
				streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaCBOR, body)
				require.NoError(t, whole.Err, "%s %s %d", decoder, kind, n)
				require.NoError(t, streamed.Err, "%s %s %d", decoder, kind, n)
				require.Equal(t, whole, streamed, "%s %s %d", decoder, kind, n)
				require.Equal(t, "4711", streamed.RV)
				require.Equal(t, "token-2", streamed.Continue)
				require.Len(t, streamed.Items, n)
			}
		}
	}
	streamed, _ := httpapi.DecodeListBothWaysForTest("unstructured-v1", httpapi.MediaCBOR, cborConfigMaps(t, 2))
	u := streamed.Items[0].(*unstructured.Unstructured)
	require.Equal(t, "ConfigMap", u.GetKind())
	require.Equal(t, "v1", u.GetAPIVersion())
	require.Equal(t, "100", u.GetResourceVersion())
}

// Every cut of a CBOR LIST body fails, or gives what the whole decode gives where that accepts
// the cut body; nothing panics.
func TestCBORListCutBodies(t *testing.T) {
	for _, body := range [][]byte{cborConfigMaps(t, 3), cborWidgets(t, 2)} {
		for cut := range len(body) {
			for _, decoder := range []string{"unstructured", "unstructured-v1"} {
				streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaCBOR, body[:cut])
				if whole.Err == nil {
					require.NoError(t, streamed.Err, "cut at %d", cut)
					require.Equal(t, whole, streamed, "cut at %d", cut)
				} else {
					require.Error(t, streamed.Err, "cut at %d", cut)
				}
			}
		}
	}
}

// cborHead is the head of a CBOR data item of major type major and argument n.
func cborHead(major byte, n int) []byte {
	switch {
	case n < 24:
		return []byte{major<<5 | byte(n)}
	case n < 256:
		return []byte{major<<5 | 24, byte(n)}
	default:
		return []byte{major<<5 | 25, byte(n >> 8), byte(n)}
	}
}

func cborText(s string) []byte { return append(cborHead(3, len(s)), s...) }

func cborCat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Indefinite-length maps and arrays, which the server does not write but CBOR allows, read as
// their definite forms do.
func TestCBORListIndefiniteLengths(t *testing.T) {
	item := cborCat([]byte{0xbf}, cborText("metadata"), []byte{0xa2}, cborText("name"), cborText("a"),
		cborText("resourceVersion"), cborText("7"), cborText("data"), []byte{0xbf}, cborText("k"),
		[]byte{0x7f}, cborText("v1"), cborText("v2"), []byte{0xff}, []byte{0xff}, []byte{0xff})
	body := cborCat([]byte{0xd9, 0xd9, 0xf7, 0xbf}, cborText("kind"), cborText("ConfigMapList"), cborText("items"), []byte{0x9f}, item, item, []byte{0xff},
		cborText("metadata"), []byte{0xa1}, cborText("resourceVersion"), cborText("9"), cborText("apiVersion"), cborText("v1"), []byte{0xff})
	for _, decoder := range []string{"unstructured", "unstructured-v1"} {
		streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaCBOR, body)
		require.NoError(t, whole.Err)
		require.NoError(t, streamed.Err)
		require.Equal(t, whole, streamed)
		require.Len(t, streamed.Items, 2)
		require.Equal(t, "v1v2", streamed.Items[0].(*unstructured.Unstructured).Object["data"].(map[string]any)["k"])
	}
}

// Malformed CBOR lists are refused with an error that says what is wrong, and a hostile length
// or nesting costs no more than the bytes that were sent.
func TestCBORListMalformed(t *testing.T) {
	head := cborCat([]byte{0xd9, 0xd9, 0xf7, 0xa3}, cborText("kind"), cborText("ConfigMapList"), cborText("items"))
	tail := cborCat(cborText("apiVersion"), cborText("v1"))
	deep := bytes.Repeat([]byte{0x81}, 200) // arrays in arrays
	for name, c := range map[string]struct {
		body []byte
		want string
	}{
		"items not an array":   {cborCat(head, []byte{0xa0}, tail), `field "items"`},
		"item not a map":       {cborCat(head, []byte{0x81, 0x07}, tail), "item 0"},
		"not a map":            {cborCat([]byte{0xd9, 0xd9, 0xf7}, []byte{0x80}), "not 5"},
		"data after":           {cborCat(cborConfigMaps(t, 1), []byte{0x00}), "data after the list"},
		"huge string":          {cborCat(head, []byte{0x81, 0x7b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, tail), "unexpected EOF"},
		"deep nesting":         {cborCat(head, []byte{0x81}, deep, []byte{0x00}), "nested deeper"},
		"break outside":        {cborCat(head, []byte{0x81, 0xff}, tail), "break"},
		"reserved info":        {cborCat(head, []byte{0x81, 0x1c}, tail), "additional information 28"},
		"key not a string":     {cborCat([]byte{0xa1, 0x01, 0x02}), "not a string"},
		"other apiVersion":     {cborCat(head, []byte{0x81, 0xa1}, cborText("metadata"), []byte{0xa1}, cborText("name"), cborText("a"), cborText("apiVersion"), cborText("v2")), `read as the "v1"`},
		"no kind":              {cborCat([]byte{0xa1}, cborText("items"), []byte{0x80}), "Kind"},
		"map ends between k/v": {cborCat([]byte{0xbf}, cborText("kind"), []byte{0xff}), "break"},
	} {
		_, _, err := httpapi.DecodeUnstructuredListStreamForTest("v1", httpapi.MediaCBOR, bytes.NewReader(c.body), func(any) error { return nil })
		require.Error(t, err, name)
		require.ErrorContains(t, err, c.want, name)
	}
}

// Items come out while the body is still arriving: the decoder holds one item, not the body.
func TestCBORListHandsItemsOverAsTheyArrive(t *testing.T) {
	body := cborConfigMaps(t, 50)
	r, w := io.Pipe()
	got := make(chan string, 50)
	done := make(chan error, 1)
	go func() {
		_, _, err := httpapi.DecodeUnstructuredListStreamForTest("v1", httpapi.MediaCBOR, r, func(obj any) error {
			got <- obj.(*unstructured.Unstructured).GetName()
			return nil
		})
		done <- err
	}()
	half := len(body) / 2
	_, err := w.Write(body[:half])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(got) > 0 }, 10*time.Second, time.Millisecond, "no item decoded after half the body")
	_, err = w.Write(body[half:])
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, <-done)
	require.Len(t, got, 50)
}

// FuzzCBORList holds the streamed CBOR decode of arbitrary bodies to apimachinery's whole-body
// decode: wherever both succeed they agree. A store that holds every item the stream decoded
// gets a LIST that succeeds as well, with the same number of items.
func FuzzCBORList(f *testing.F) {
	for _, seed := range [][]byte{cborConfigMaps(f, 2), cborWidgets(f, 2), cborConfigMaps(f, 2)[:40], {0xd9, 0xd9, 0xf7}, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decoder := range []string{"unstructured", "unstructured-v1"} {
			streamed, whole := httpapi.DecodeListBothWaysForTest(decoder, httpapi.MediaCBOR, body)
			if whole.Err == nil && streamed.Err == nil {
				require.Equal(t, whole, streamed, decoder)
			}
			if streamed.Err == nil {
				items, _, _, err := httpapi.DecodeListHeldForTest("unstructured", httpapi.MediaCBOR, body, heldMap(heldFromItems(t, streamed.Items)))
				require.NoError(t, err, decoder)
				require.Len(t, items, len(streamed.Items), decoder)
			}
		}
	})
}

package httpapi_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi"
)

// FuzzWatchStream feeds arbitrary bytes to the watch-frame decoder: it must never panic, must
// end every stream with exactly one terminal event, and every object event must carry its
// object (or, handed over unchanged, its key).
func FuzzWatchStream(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"}}}` + "\n",
		`{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`,
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}`,
		`{"type":"ERROR","object":{"kind":"ConfigMap"}}`,
		`{"type":"DELETED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}{"type":"ADDED"`,
		`<html>502</html>`,
		`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"tr`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkStream(t, body, httpapi.DecodeStreamForTest)
		checkStream(t, body, heldStream(httpapi.MediaJSON))
		checkDecodedOnce(t, httpapi.MediaJSON, httpapi.Unstructured(), body)
	})
}

// FuzzProtobufWatchStream does the same for protobuf streams: length-delimited frames of
// metav1.WatchEvent, decoded typed. The seeds are real frames (as apimachinery writes them) and
// the ways they go wrong.
func FuzzProtobufWatchStream(f *testing.F) {
	frame := func(typ string, obj runtime.Object) []byte {
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		raw, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
		if err != nil {
			f.Fatal(err)
		}
		b, err := (&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}).Marshal()
		if err != nil {
			f.Fatal(err)
		}
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5"}}
	expired := apierrors.NewResourceExpired("too old").Status()
	added := frame("ADDED", cm)
	for _, seed := range [][]byte{
		added,
		append(append([]byte{}, added...), frame("DELETED", cm)...),
		frame("ERROR", &expired),
		frame("ERROR", cm),
		frame("BOOKMARK", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}),
		added[:len(added)/2],
		{0, 0, 0, 3, 1, 2, 3},
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkStream(t, body, httpapi.DecodeProtobufStreamForTest)
		checkStream(t, body, heldStream(httpapi.MediaProtobuf))
		checkDecodedOnce(t, httpapi.MediaProtobuf, httpapi.Typed(scheme.Scheme), body)
	})
}

// FuzzCBORWatchStream does the same for CBOR streams: a CBOR sequence of metav1.WatchEvent
// with unstructured objects, seeded with real items as apimachinery's CBOR serializer writes them.
func FuzzCBORWatchStream(f *testing.F) {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	info := cbor.NewSerializerInfo(s, s)
	item := func(typ string, obj runtime.Object) []byte {
		var raw, b bytes.Buffer
		if err := info.Serializer.Encode(obj, &raw); err != nil {
			f.Fatal(err)
		}
		if err := info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw.Bytes()}}, &b); err != nil {
			f.Fatal(err)
		}
		return b.Bytes()
	}
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "demo.rewatch.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "resourceVersion": "5"}}}
	expired := apierrors.NewResourceExpired("too old").Status()
	expired.Kind, expired.APIVersion = "Status", "v1"
	added := item("ADDED", w)
	for _, seed := range [][]byte{added, append(append([]byte{}, added...), item("DELETED", w)...), item("ERROR", &expired),
		item("ERROR", w), added[:len(added)/2], {0xa1, 0x00}, {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkStream(t, body, httpapi.DecodeCBORStreamForTest)
	})
}

// checkStream decodes body and checks what every stream must satisfy: exactly one terminal
// event, last; a key on every object event; a failure that says what it is.
func checkStream(t *testing.T, body []byte, decode func(io.ReadCloser, int64, func(fsm.Event) bool)) {
	t.Helper()
	var events []fsm.Event
	decode(io.NopCloser(bytes.NewReader(body)), 4096, func(e fsm.Event) bool {
		events = append(events, e)
		return true
	})
	if len(events) == 0 {
		t.Fatal("stream ended without a terminal event")
	}
	for i, e := range events {
		terminal := e.Kind == fsm.EvWatchEnded || e.Kind == fsm.EvWatchError
		if terminal != (i == len(events)-1) {
			t.Fatalf("event %d of %d: %s", i, len(events), e)
		}
		// An object without a name is keyed "" (cluster-scoped) or "namespace/", as client-go's
		// key function keys it; an event handed over as a key has a name.
		if e.Kind == fsm.EvWatchEvent && e.Type != fsm.Bookmark && e.Object == nil && !kept(e) {
			t.Fatalf("object event without object or key: %s", e)
		}
		if e.Failure != nil && e.Failure.Status == nil && e.Failure.Transport == fsm.NoTransportError {
			t.Fatalf("failure that says nothing: %s", e)
		}
	}
}

// heldStream decodes a watch-list stream for a store holding ns/a at resourceVersion 5 (what
// the seeds' ADDED frames carry), typed.
func heldStream(media string) func(io.ReadCloser, int64, func(fsm.Event) bool) {
	return func(body io.ReadCloser, _ int64, emit func(fsm.Event) bool) {
		httpapi.DecodeStreamHeldForTest(media, body, heldMap(map[string]string{"ns/a": "5"}), emit)
	}
}

// kept says whether e is an initial ADDED event left undecoded for the store heldStream
// describes: only such an event may come without its object.
func kept(e fsm.Event) bool {
	return e.Type == fsm.Added && e.Key == "ns/a" && e.ResourceVersion == "5"
}

// ownDecoder is a built-in decoder disguised as a caller's own, whose frames are decoded into
// a WatchEvent before their object, as every frame was before frames were decoded once.
type ownDecoder struct{ httpapi.Decoder }

// checkDecodedOnce holds the stream's events, decoded once per frame, to what decoding each
// frame into a WatchEvent first gives: the same events, objects and failures.
func checkDecodedOnce(t *testing.T, media string, d httpapi.Decoder, body []byte) {
	t.Helper()
	events := func(d httpapi.Decoder) []fsm.Event {
		var out []fsm.Event
		httpapi.DecodeStreamWithForTest(media, d, io.NopCloser(bytes.NewReader(body)), 4096, func(e fsm.Event) bool {
			out = append(out, e)
			return true
		})
		return out
	}
	require.Equal(t, events(ownDecoder{d}), events(d))
}

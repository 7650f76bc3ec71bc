package httpapi

import (
	"bytes"
	"context"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/clockx"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// DecodeStreamForTest exposes the JSON frame decoder to the fuzz target.
func DecodeStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaJSON, 1, nil, nil, emit)
}

// DecodeProtobufStreamForTest exposes the protobuf frame decoder, typed, to the fuzz target.
func DecodeProtobufStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Typed(scheme.Scheme), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaProtobuf, 1, nil, nil, emit)
}

// DecodeCBORStreamForTest exposes the CBOR frame decoder, unstructured, to the fuzz target.
func DecodeCBORStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaCBOR, 1, nil, nil, emit)
}

// DecodeProtobufListBothWaysForTest decodes a protobuf LIST body item by item and in one
// piece, typed, so that a test can hold the two to the same result.
func DecodeProtobufListBothWaysForTest(body []byte) (streamed, whole ListResultForTest) {
	d := Typed(scheme.Scheme).(typedDecoder)
	streamed.Items, streamed.RV, streamed.Continue, streamed.Err = d.DecodeList(MediaProtobuf, body)
	whole.Items, whole.RV, whole.Continue, whole.Err = d.decodeWholeList(MediaProtobuf, body)
	return streamed, whole
}

// ListResultForTest is what a Decoder's DecodeList returns.
type ListResultForTest struct {
	Items        []any
	RV, Continue string
	Err          error
}

// DecodeListBothWaysForTest decodes a LIST body in the given media type with the named
// decoder ("typed", "metadata", "unstructured", "unstructured-v1") item by item from a stream and in one piece,
// so that a test can hold the two to the same result.
func DecodeListBothWaysForTest(decoder, mediaType string, body []byte) (streamed, whole ListResultForTest) {
	var d ListStreamDecoder
	var decodeWhole func([]byte) ([]any, string, string, error)
	switch decoder {
	case "typed":
		td := Typed(scheme.Scheme).(typedDecoder)
		d, decodeWhole = td, func(b []byte) ([]any, string, string, error) { return td.decodeWholeList(mediaType, b) }
	case "metadata":
		d, decodeWhole = metadataDecoder{}, func(b []byte) ([]any, string, string, error) { return decodeWholeMetadataList(mediaType, b) }
	default:
		// "unstructured-v1" is the decoder a transport for a core resource builds: it knows
		// the apiVersion it asked for.
		u := unstructuredDecoder{}
		if decoder == "unstructured-v1" {
			u.apiVersion = "v1"
		}
		d, decodeWhole = u, func(b []byte) ([]any, string, string, error) {
			var l unstructured.UnstructuredList
			if err := decodeUnstructured(mediaType, b, &l); err != nil {
				return nil, "", "", err
			}
			items := make([]any, len(l.Items))
			for i := range l.Items {
				items[i] = &unstructured.Unstructured{Object: l.Items[i].Object}
			}
			return items, l.GetResourceVersion(), l.GetContinue(), nil
		}
	}
	streamed.Items = []any{}
	streamed.RV, streamed.Continue, streamed.Err = d.DecodeListStream(mediaType, bytes.NewReader(body), func(obj any) error {
		streamed.Items = append(streamed.Items, obj)
		return nil
	})
	if streamed.Err != nil {
		streamed.Items = nil
	}
	whole.Items, whole.RV, whole.Continue, whole.Err = decodeWhole(body)
	return streamed, whole
}

// DecodeUnstructuredListStreamForTest is the Unstructured decoder of a transport that asked for
// apiVersion, reading a LIST body item by item.
func DecodeUnstructuredListStreamForTest(apiVersion, mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	return unstructuredDecoder{apiVersion: apiVersion}.DecodeListStream(mediaType, body, item)
}

// HeldItemForTest is one item of a list decoded for a store that holds some of its items:
// the decoded object, or the key and resourceVersion of an item left undecoded.
type HeldItemForTest struct {
	Object  any
	Key, RV string
}

// DecodeListHeldForTest decodes a LIST body with the named decoder (as DecodeListBothWaysForTest)
// for a store whose versions held reports.
func DecodeListHeldForTest(decoder, mediaType string, body []byte, held func(namespace, name string) (rv, uid string, ok bool)) (items []HeldItemForTest, rv, cont string, err error) {
	var d Decoder = unstructuredDecoder{}
	switch decoder {
	case "typed":
		d = Typed(scheme.Scheme)
	case "metadata":
		d = metadataDecoder{}
	}
	h := &wire.Held{Versions: held, Kept: func(key, rv string) error {
		items = append(items, HeldItemForTest{Key: key, RV: rv})
		return nil
	}}
	rv, cont, err = decodeListStream(d, mediaType, bytes.NewReader(body), h, func(obj any) error {
		items = append(items, HeldItemForTest{Object: obj})
		return nil
	})
	return items, rv, cont, err
}

// DecodeStreamHeldForTest decodes a watch-list stream in the given media type, typed, for a
// store whose versions held reports.
func DecodeStreamHeldForTest(mediaType string, body io.ReadCloser, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	DecodeStreamHeldWithForTest(mediaType, Typed(scheme.Scheme), body, held, emit)
}

// DecodeStreamHeldWithForTest is DecodeStreamHeldForTest with the decoder d.
func DecodeStreamHeldWithForTest(mediaType string, d Decoder, body io.ReadCloser, held func(namespace, name string) (rv, uid string, ok bool), emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: d, MaxFrameBytes: 1 << 20}}
	t.decodeStream(context.Background(), body, mediaType, 1, nil, &initialSkip{held: held}, emit)
}

// DecodeStreamWithForTest decodes a watch stream in the given media type with the decoder d.
func DecodeStreamWithForTest(mediaType string, d Decoder, body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: d, MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, mediaType, 1, nil, nil, emit)
}

// WithProgressClockForTest is c with the clock the LIST progress bounds are measured on.
func WithProgressClockForTest(c Config, clock clockx.Clock) Config {
	c.progressClock = clock
	return c
}

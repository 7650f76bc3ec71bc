package httpapi

import (
	"context"
	"io"

	"k8s.io/client-go/kubernetes/scheme"

	"github.com/rewatch/rewatch/fsm"
)

// DecodeStreamForTest exposes the JSON frame decoder to the fuzz target.
func DecodeStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaJSON, 1, emit)
}

// DecodeProtobufStreamForTest exposes the protobuf frame decoder, typed, to the fuzz target.
func DecodeProtobufStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Typed(scheme.Scheme), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaProtobuf, 1, emit)
}

// DecodeCBORStreamForTest exposes the CBOR frame decoder, unstructured, to the fuzz target.
func DecodeCBORStreamForTest(body io.ReadCloser, maxFrame int64, emit func(fsm.Event) bool) {
	t := &Transport{cfg: Config{Decoder: Unstructured(), MaxFrameBytes: maxFrame}}
	t.decodeStream(context.Background(), body, MediaCBOR, 1, emit)
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

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

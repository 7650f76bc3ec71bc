package cborwire

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// Frames reads the frames of a CBOR watch stream, a CBOR sequence of metav1.WatchEvent.
// Its frames are always decoded into a WatchEvent: the object scanCBORWatchFrame finds is used
// only for its metadata.
var Frames = wire.Frames{Reader: cbor.NewFramer().NewFrameReader, Decode: cborWatchEventDecoder{}, Scan: scanCBORWatchFrame, Meta: ScanMeta}

// cborWatchEventDecoder decodes one item of a CBOR sequence into metav1.WatchEvent, leaving the
// object raw for the configured Decoder.
type cborWatchEventDecoder struct{}

func (cborWatchEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	we, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch frames decode into *metav1.WatchEvent, not %T", into)
	}
	if _, _, err := wireCBORStream.Decode(data, nil, we); err != nil {
		return nil, nil, &fsm.DecodeError{Err: fmt.Errorf("CBOR watch frame: %w", err)}
	}
	return we, nil, nil
}

package pbwire

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/framer"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// Frames reads the frames of a protobuf watch stream: length-delimited frames, each a
// metav1.WatchEvent whose object is a protobuf body of its own.
var Frames = wire.Frames{Reader: framer.NewLengthDelimitedFrameReader, Decode: protobufWatchEventDecoder{}, Scan: scanProtobufWatchEvent, Meta: protobufEmbeddedMeta, Direct: true}

// protobufWatchEventDecoder decodes a length-delimited frame into metav1.WatchEvent with its
// generated protobuf code, leaving the object raw for the configured Decoder.
type protobufWatchEventDecoder struct{}

func (protobufWatchEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	we, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch frames decode into *metav1.WatchEvent, not %T", into)
	}
	if err := we.Unmarshal(data); err != nil {
		return nil, nil, &fsm.DecodeError{Err: fmt.Errorf("protobuf watch frame: %w", err)}
	}
	return we, nil, nil
}

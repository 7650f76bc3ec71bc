package jsonwire

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/framer"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// Frames reads the frames of a JSON watch stream, a sequence of JSON metav1.WatchEvent
// objects.
var Frames = wire.Frames{Reader: framer.NewJSONFramedReader, Decode: watchEventDecoder{}, Scan: jsonWatchEvent, Meta: ScanMeta, Direct: true}

// watchEventDecoder decodes a frame into metav1.WatchEvent, leaving the object raw so the
// configured Decoder can read it.
type watchEventDecoder struct{}

func (watchEventDecoder) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	we, ok := into.(*metav1.WatchEvent)
	if !ok {
		return nil, nil, fmt.Errorf("watch frames decode into *metav1.WatchEvent, not %T", into)
	}
	if err := UnmarshalCaseSensitive(data, we); err != nil {
		// Marked here, where it is known to be about the bytes: sigs.k8s.io/json's syntax
		// errors are its own types, which a caller cannot match.
		return nil, nil, &fsm.DecodeError{Err: err}
	}
	return we, nil, nil
}

// jsonWatchEvent is a JSON frame's type and object span; an object that is null is left to
// the WatchEvent decode, which makes it no object at all.
func jsonWatchEvent(frame []byte) (typ, raw []byte, ok bool) {
	typ, raw, ok = scanJSONWatchFrame(frame)
	if !ok || string(raw) == "null" {
		return nil, nil, false
	}
	return typ, raw, true
}

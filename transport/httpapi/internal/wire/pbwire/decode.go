package pbwire

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// Magic starts every protobuf body and embedded object the API server writes: "k8s"
// and a zero byte, then a runtime.Unknown carrying the object's kind.
var Magic = []byte{0x6b, 0x38, 0x73, 0x00}

var wireProtobuf = protobuf.NewSerializer(wire.Scheme, wire.Scheme)

// Decode decodes a protobuf body or embedded object into into, which must be the
// kind the body says it is.
func Decode(raw []byte, into runtime.Object) error {
	return wire.DecodeInto(wireProtobuf, raw, into)
}

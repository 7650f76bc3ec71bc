package cborwire

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// Magic starts every CBOR body the API server writes: the self-described CBOR tag.
var Magic = []byte{0xd9, 0xd9, 0xf7}

// wireCBOR decodes CBOR bodies and embedded objects; wireCBORStream the frames of a CBOR
// watch stream (a CBOR sequence of metav1.WatchEvent), as apimachinery's CBOR serializer info
// pairs them.
var (
	wireCBOR       = cbor.NewSerializer(wire.Scheme, wire.Scheme)
	wireCBORStream = cbor.NewSerializer(wire.Scheme, wire.Scheme, cbor.Transcode(false))
)

// Decode decodes a CBOR body or embedded object into into.
func Decode(raw []byte, into runtime.Object) error { return wire.DecodeInto(wireCBOR, raw, into) }

// Encode writes obj as the API server writes a CBOR body: the self-described CBOR tag, then
// the object.
func Encode(obj runtime.Object, w io.Writer) error { return wireCBOR.Encode(obj, w) }

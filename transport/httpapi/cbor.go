package httpapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
)

// cborMagic starts every CBOR body the API server writes: the self-described CBOR tag.
var cborMagic = []byte{0xd9, 0xd9, 0xf7}

// wireCBOR decodes CBOR bodies and embedded objects; wireCBORStream the frames of a CBOR
// watch stream (a CBOR sequence of metav1.WatchEvent), as apimachinery's CBOR serializer info
// pairs them.
var (
	wireCBOR       = cbor.NewSerializer(wireScheme, wireScheme)
	wireCBORStream = cbor.NewSerializer(wireScheme, wireScheme, cbor.Transcode(false))
)

// decodeCBOR decodes a CBOR body or embedded object into into.
func decodeCBOR(raw []byte, into runtime.Object) error { return decodeInto(wireCBOR, raw, into) }

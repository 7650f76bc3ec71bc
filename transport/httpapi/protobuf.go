package httpapi

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// cborMagic starts every CBOR body the API server writes: the self-described CBOR tag.
var cborMagic = []byte{0xd9, 0xd9, 0xf7}

// protobufMagic starts every protobuf body and embedded object the API server writes: "k8s"
// and a zero byte, then a runtime.Unknown carrying the object's kind.
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// wireScheme knows the meta.k8s.io kinds the transport reads itself, whatever the decoder: a
// Status (error bodies, ERROR events) and PartialObjectMetadata (metadata-only requests).
var wireScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

var wireProtobuf = protobuf.NewSerializer(wireScheme, wireScheme)

// wireCBOR decodes CBOR bodies and embedded objects; wireCBORStream the frames of a CBOR
// watch stream (a CBOR sequence of metav1.WatchEvent), as apimachinery's CBOR serializer info
// pairs them.
var (
	wireCBOR       = cbor.NewSerializer(wireScheme, wireScheme)
	wireCBORStream = cbor.NewSerializer(wireScheme, wireScheme, cbor.Transcode(false))
)

// decodeWireProtobuf decodes a protobuf body or embedded object into into, which must be the
// kind the body says it is.
func decodeWireProtobuf(raw []byte, into runtime.Object) error {
	return decodeInto(wireProtobuf, raw, into)
}

// decodeCBOR decodes a CBOR body or embedded object into into.
func decodeCBOR(raw []byte, into runtime.Object) error { return decodeInto(wireCBOR, raw, into) }

func decodeInto(d runtime.Decoder, raw []byte, into runtime.Object) error {
	obj, gvk, err := d.Decode(raw, nil, into)
	if err != nil {
		return err
	}
	if obj != into {
		return fmt.Errorf("the body is a %s, not a %T", gvk.Kind, into)
	}
	return nil
}

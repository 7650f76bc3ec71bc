package httpapi

import (
	"fmt"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// Each wire format is one file set — json_*.go, protobuf*.go, cbor_*.go — and one frameFormat
// (watch_frames.go) for its watch frames: how a LIST body in it streams item by item
// (json_list.go, protobuf_stream.go, cbor_list.go), how an object's metadata is scanned from
// its bytes (json_scan.go, protobuf_scan.go, cbor_scan.go), how a watch frame is scanned and
// decoded (json_watch.go, protobuf_watch.go, cbor_watch.go), and how a body or object in it is
// decoded (protobuf.go, cbor.go, json_list.go). What they share is here.

// During a relist most items are objects the store already holds at the same resourceVersion;
// decoding them only for the store to drop the copy is what a relist's memory peak is made of
// (bench/RESULTS.md, "Relists"). So when the driver hands over the store's query, an item's
// namespace, name and resourceVersion are read from its bytes first, without decoding it and
// without allocating, and an item the store holds at that resourceVersion goes on as "key K
// unchanged" with no object (docs/semantics.md, "Relists"). The scanners vouch only for what
// the type decode would read the same way: an item whose metadata is missing, repeated, not a
// string, or otherwise unusual is decoded as before, so that it fails, or not, as before.

// itemMeta is what a relist needs of an item to tell whether the store holds it unchanged:
// views into the item's bytes (for a JSON string with escapes, a decoded copy).
type itemMeta struct{ namespace, name, resourceVersion []byte }

// unchanged reports whether held holds the item at the item's own non-empty resourceVersion,
// with the key and resourceVersion of the event that says so. The key is the one allocation;
// the resourceVersion is the store's own string.
func unchanged(held func(namespace, name string) (string, bool), m itemMeta) (key, rv string, ok bool) {
	if len(m.name) == 0 || len(m.resourceVersion) == 0 {
		return "", "", false
	}
	v, ok := held(bytesView(m.namespace), bytesView(m.name))
	if !ok || v != string(m.resourceVersion) {
		return "", "", false
	}
	if len(m.namespace) == 0 {
		return string(m.name), v, true
	}
	return string(m.namespace) + "/" + string(m.name), v, true
}

// bytesView is b as a string without a copy, for a lookup that does not keep it.
func bytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// wireScheme knows the meta.k8s.io kinds the transport reads itself, whatever the decoder: a
// Status (error bodies, ERROR events) and PartialObjectMetadata (metadata-only requests).
var wireScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

// decodeInto decodes a body or embedded object with d into into, which must be the kind the
// body says it is.
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

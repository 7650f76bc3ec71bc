package pbwire

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A protobuf LIST body is the API server's envelope (the magic number, then a runtime.Unknown
// naming the kind) around the list message. apimachinery's serializer copies the envelope's
// raw bytes out of the body, decodes the whole list, and the caller then copies every item out
// of the list's array so that one cached object does not pin the others: at the moment of the
// copy the body, its copy, the array and the copies are all alive. Reading the envelope's and
// the list's fields one by one from the stream (stream.go) and unmarshalling each item
// into its own allocation with its generated Unmarshal keeps one item's bytes and the items
// (bench/RESULTS.md, "Relists"). Field numbers come from the list type's protobuf tags, not from
// assumptions; a list type without them is decoded the general way.

// ErrNotStreamable says a body or list type does not fit the item-by-item decode; the caller
// falls back to apimachinery's whole-list decode, which also produces the better error.
var ErrNotStreamable = errors.New("not decodable item by item")

type protoUnmarshaler interface{ Unmarshal([]byte) error }

// protobufListLayout is where a list type keeps its metadata and items on the wire.
type protobufListLayout struct {
	item       reflect.Type // the item struct (corev1.Pod); []T and []*T both decode to *T
	metaField  FieldNumber
	itemsField FieldNumber
	itemMeta   FieldNumber // the item's ObjectMeta; 0: items are always decoded
}

// listLayout reads the layout from the list type's struct tags.
func listLayout(list runtime.Object) (protobufListLayout, bool) {
	t := reflect.TypeOf(list)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return protobufListLayout{}, false
	}
	t = t.Elem()
	var l protobufListLayout
	for i := range t.NumField() {
		f := t.Field(i)
		switch {
		case f.Type == reflect.TypeOf(metav1.ListMeta{}):
			l.metaField = protobufFieldNumber(f.Tag)
		case f.Name == "Items" && f.Type.Kind() == reflect.Slice:
			l.itemsField = protobufFieldNumber(f.Tag)
			l.item = f.Type.Elem()
			if l.item.Kind() == reflect.Pointer {
				l.item = l.item.Elem()
			}
		}
	}
	if l.metaField == 0 || l.itemsField == 0 || l.item == nil || l.item.Kind() != reflect.Struct {
		return protobufListLayout{}, false
	}
	if !reflect.PointerTo(l.item).Implements(reflect.TypeOf((*protoUnmarshaler)(nil)).Elem()) {
		return protobufListLayout{}, false
	}
	l.itemMeta = ObjectMetaField(l.item)
	return l, true
}

// protobufFieldNumber reads N from a `protobuf:"bytes,N,…"` tag; 0 when there is none.
func protobufFieldNumber(tag reflect.StructTag) FieldNumber {
	parts := strings.Split(tag.Get("protobuf"), ",")
	if len(parts) < 2 || parts[0] != "bytes" {
		return 0
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil || n <= 0 {
		return 0
	}
	return FieldNumber(n)
}

// FieldNumber is a protobuf field's number.
type FieldNumber uint64

// Protobuf wire types (the low three bits of a field's key).
const (
	wireVarint     = 0
	wireFixed64    = 1
	wireBytes      = 2
	wireStartGroup = 3
	wireEndGroup   = 4
	wireFixed32    = 5
)

var errTruncated = errors.New("protobuf message truncated or malformed")

// splitKey splits a field's key into its field number and wire type as generated code does,
// which keeps the number's low 32 bits: a key protowire would call out of range names the
// field those bits name, for the whole decode as here. ok is false for a number generated
// code refuses (≤ 0) and for an end group outside a group.
func splitKey(key uint64) (num FieldNumber, typ uint64, ok bool) {
	n := int32(key >> 3)
	return FieldNumber(n), key & 7, n > 0 && key&7 != wireEndGroup
}

// eachField calls fn with every length-delimited field of a message, in order; varint and
// fixed-size fields are skipped, as generated code skips fields it does not know. A protobuf
// key and length are unsigned LEB128 varints, which encoding/binary reads. Group fields (a
// wire type no Kubernetes type uses) make the message not decodable item by item, and the
// whole-list decode takes over.
func eachField(b []byte, fn func(FieldNumber, []byte) error) error {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return errTruncated
		}
		b = b[n:]
		num, typ, ok := splitKey(key)
		if !ok {
			return errTruncated
		}
		var skip uint64
		switch typ {
		case wireVarint:
			if _, n = binary.Uvarint(b); n <= 0 {
				return errTruncated
			}
			skip = uint64(n)
		case wireFixed64:
			skip = 8
		case wireFixed32:
			skip = 4
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return errTruncated
			}
			if err := fn(num, b[n:n+int(l)]); err != nil {
				return err
			}
			skip = uint64(n) + l
		default:
			return ErrNotStreamable
		}
		if skip > uint64(len(b)) {
			return errTruncated
		}
		b = b[skip:]
	}
	return nil
}

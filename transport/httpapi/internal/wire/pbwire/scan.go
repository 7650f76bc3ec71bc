package pbwire

import (
	"encoding/binary"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// The protobuf metadata scan (package wire): an object's namespace, name and
// resourceVersion, and a watch frame's type and object, read from the bytes without decoding
// or allocating.

// objectMetaFields are the field numbers of ObjectMeta's name, namespace, resourceVersion and
// uid, read from its protobuf tags (k8s.io/apimachinery's generated.proto: 1, 3, 6 and 5).
var objectMetaFields = func() (f struct{ name, namespace, resourceVersion, uid FieldNumber }) {
	t := reflect.TypeOf(metav1.ObjectMeta{})
	for _, x := range []struct {
		field string
		into  *FieldNumber
	}{{"Name", &f.name}, {"Namespace", &f.namespace}, {"ResourceVersion", &f.resourceVersion}, {"UID", &f.uid}} {
		sf, _ := t.FieldByName(x.field)
		*x.into = protobufFieldNumber(sf.Tag)
	}
	return f
}()

// ObjectMetaField is the field number of an object type's ObjectMeta, from its protobuf tag;
// 0 when it has none.
func ObjectMetaField(item reflect.Type) FieldNumber {
	for i := range item.NumField() {
		if f := item.Field(i); f.Type == reflect.TypeOf(metav1.ObjectMeta{}) {
			return protobufFieldNumber(f.Tag)
		}
	}
	return 0
}

// ScanMeta reads the namespace, name, resourceVersion and uid of the object message b, whose
// ObjectMeta is field metaField. Every field of the message is walked, so that a message whose
// framing is broken is not vouched for; ok is false unless the metadata appears once, with name
// and resourceVersion once each and namespace and uid at most once.
func ScanMeta(b []byte, metaField FieldNumber) (m wire.Meta, ok bool) {
	var metadata []byte
	seen := 0
	if metaField == 0 || !protoFields(b, func(num FieldNumber, typ uint64, v []byte) bool {
		if num != metaField {
			return true
		}
		metadata = v
		seen++
		return typ == wireBytes
	}) || seen != 1 {
		return wire.Meta{}, false
	}
	var names, namespaces, rvs, uids int
	f := objectMetaFields
	if !protoFields(metadata, func(num FieldNumber, typ uint64, v []byte) bool {
		switch num {
		case f.name:
			m.Name, names = v, names+1
		case f.namespace:
			m.Namespace, namespaces = v, namespaces+1
		case f.resourceVersion:
			m.ResourceVersion, rvs = v, rvs+1
		case f.uid:
			m.UID, uids = v, uids+1
		default:
			return true
		}
		return typ == wireBytes
	}) || names != 1 || namespaces > 1 || rvs != 1 || uids > 1 {
		return wire.Meta{}, false
	}
	return m, true
}

// protobufEmbeddedMeta is the metadata of a protobuf watch frame's object: raw is the
// object's bytes as the frame carries them (scanProtobufWatchEvent), the raw envelope (the
// magic number, then a runtime.Unknown: typeMeta 1, raw 2, contentEncoding 3, contentType 4)
// around the object message. A watch frame does not name its object's Go type, so the
// metadata's field number is the one every Kubernetes object type (and PartialObjectMetadata)
// gives its ObjectMeta: 1. Not ok for anything repeated or an encoded object.
func protobufEmbeddedMeta(raw []byte) (wire.Meta, bool) {
	if len(raw) < len(Magic) || string(raw[:len(Magic)]) != string(Magic) {
		return wire.Meta{}, false
	}
	var object []byte
	objects := 0
	if !protoFields(raw[len(Magic):], func(num FieldNumber, wt uint64, v []byte) bool {
		switch num {
		case 2:
			object, objects = v, objects+1
		case 3: // contentEncoding: an encoded object is not a message to scan
			return len(v) == 0
		default:
			return true
		}
		return wt == wireBytes
	}) || objects != 1 {
		return wire.Meta{}, false
	}
	return ScanMeta(object, 1)
}

// protoFields calls fn with every field of a message — its number, wire type and, for a
// length-delimited one, its bytes — and reports whether the message was well framed and fn
// accepted every field.
func protoFields(b []byte, fn func(num FieldNumber, typ uint64, v []byte) bool) bool {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		num, typ, ok := splitKey(key)
		if n <= 0 || !ok {
			return false
		}
		b = b[n:]
		var v []byte
		switch typ {
		case wireVarint:
			_, n := binary.Uvarint(b)
			if n <= 0 {
				return false
			}
			b = b[n:]
		case wireFixed64, wireFixed32:
			size := 8
			if typ == wireFixed32 {
				size = 4
			}
			if len(b) < size {
				return false
			}
			b = b[size:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || l > uint64(len(b)-n) {
				return false
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return false
		}
		if !fn(num, typ, v) {
			return false
		}
	}
	return true
}

// scanProtobufWatchEvent reads a protobuf watch frame — a metav1.WatchEvent: type (1), object
// (2, a runtime.RawExtension whose raw is 1) — as far as its type and its object's raw bytes,
// each of which must appear once.
func scanProtobufWatchEvent(frame []byte) (typ, raw []byte, ok bool) {
	var ext []byte
	types, exts := 0, 0
	if !protoFields(frame, func(num FieldNumber, wt uint64, v []byte) bool {
		switch num {
		case 1:
			typ, types = v, types+1
		case 2:
			ext, exts = v, exts+1
		default:
			return true
		}
		return wt == wireBytes
	}) || types != 1 || exts != 1 {
		return nil, nil, false
	}
	raws := 0
	if !protoFields(ext, func(num FieldNumber, wt uint64, v []byte) bool {
		if num == 1 {
			raw, raws = v, raws+1
			return wt == wireBytes
		}
		return true
	}) || raws != 1 {
		return nil, nil, false
	}
	return typ, raw, true
}

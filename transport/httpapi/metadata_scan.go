package httpapi

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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

// JSON

// scanJSONMeta reads the namespace, name and resourceVersion of the object raw holds: the
// string members "namespace", "name" and "resourceVersion" of its top-level "metadata" object,
// keys compared case-sensitively as apimachinery's decoding compares them. ok is false unless
// metadata appears once, name and resourceVersion once each and namespace at most once, all
// strings.
func scanJSONMeta(raw []byte) (m itemMeta, ok bool) {
	var metadata []byte
	seen := 0
	if !jsonFields(raw, func(key []byte, escaped bool, value []byte) bool {
		if jsonKeyIs(key, escaped, "metadata") {
			metadata = value
			seen++
		}
		return true
	}) || seen != 1 {
		return itemMeta{}, false
	}
	var names, namespaces, rvs int
	if !jsonFields(metadata, func(key []byte, escaped bool, value []byte) bool {
		var into *[]byte
		switch {
		case jsonKeyIs(key, escaped, "name"):
			into, names = &m.name, names+1
		case jsonKeyIs(key, escaped, "namespace"):
			into, namespaces = &m.namespace, namespaces+1
		case jsonKeyIs(key, escaped, "resourceVersion"):
			into, rvs = &m.resourceVersion, rvs+1
		default:
			return true
		}
		s, ok := jsonStringValue(value)
		*into = s
		return ok
	}) || names != 1 || namespaces > 1 || rvs != 1 {
		return itemMeta{}, false
	}
	return m, true
}

// scanJSONWatchFrame reads a JSON watch frame's "type" and the span of its "object", each of
// which must appear once.
func scanJSONWatchFrame(frame []byte) (typ, object []byte, ok bool) {
	types, objects := 0, 0
	if !jsonFields(frame, func(key []byte, escaped bool, value []byte) bool {
		switch {
		case jsonKeyIs(key, escaped, "type"):
			types++
			var ok bool
			typ, ok = jsonStringValue(value)
			return ok
		case jsonKeyIs(key, escaped, "object"):
			objects++
			object = value
		}
		return true
	}) || types != 1 || objects != 1 {
		return nil, nil, false
	}
	return typ, object, true
}

// jsonKeyIs compares a member's key, as it stands between its quotes, with want.
func jsonKeyIs(key []byte, escaped bool, want string) bool {
	if !escaped {
		return string(key) == want
	}
	s, ok := jsonUnescape(key)
	return ok && string(s) == want
}

// jsonStringValue is the content of a JSON string value; not ok for any other value (null
// included: the type decode would make it "", which the scanner does not second-guess).
func jsonStringValue(value []byte) ([]byte, bool) {
	s := jsonScanner{b: value}
	content, escaped, ok := s.str()
	if !ok || s.i != len(value) {
		return nil, false
	}
	if escaped {
		return jsonUnescape(content)
	}
	return content, true
}

// jsonUnescape decodes a string's content with escapes, as encoding/json does; rare enough
// (Kubernetes names need none) to allocate.
func jsonUnescape(content []byte) ([]byte, bool) {
	quoted := make([]byte, 0, len(content)+2)
	quoted = append(append(append(quoted, '"'), content...), '"')
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

// jsonFields calls fn with each member of the JSON object b holds — its key as it stands
// between the quotes, whether that has escapes, and the span of its value — and reports
// whether b was an object and fn accepted every member. b has passed encoding/json's syntax
// check (the Decoder that read it), but the scan never trusts it: anything unexpected ends
// it with false, never a panic.
func jsonFields(b []byte, fn func(key []byte, escaped bool, value []byte) bool) bool {
	s := jsonScanner{b: b}
	s.space()
	if !s.is('{') {
		return false
	}
	s.i++
	s.space()
	if s.is('}') {
		s.i++
		return s.end()
	}
	for {
		s.space()
		key, escaped, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if !s.is(':') {
			return false
		}
		s.i++
		s.space()
		start := s.i
		if !s.skip() {
			return false
		}
		if !fn(key, escaped, b[start:s.i]) {
			return false
		}
		s.space()
		switch {
		case s.is(','):
			s.i++
		case s.is('}'):
			s.i++
			return s.end()
		default:
			return false
		}
	}
}

type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) is(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end reports whether nothing but white space follows.
func (s *jsonScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads the string at the scanner: its content between the quotes and whether it holds
// escapes.
func (s *jsonScanner) str() (content []byte, escaped, ok bool) {
	if !s.is('"') {
		return nil, false, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], escaped, true
		}
	}
	return nil, false, false
}

// skip passes over the value at the scanner.
func (s *jsonScanner) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case ',', ':', '}', ']':
		return false
	}
	start := s.i // a number, true, false or null
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

// Protobuf

// objectMetaFields are the field numbers of ObjectMeta's name, namespace and resourceVersion,
// read from its protobuf tags (k8s.io/apimachinery's generated.proto: 1, 3 and 6).
var objectMetaFields = func() (f struct{ name, namespace, resourceVersion fieldNumber }) {
	t := reflect.TypeOf(metav1.ObjectMeta{})
	for _, x := range []struct {
		field string
		into  *fieldNumber
	}{{"Name", &f.name}, {"Namespace", &f.namespace}, {"ResourceVersion", &f.resourceVersion}} {
		sf, _ := t.FieldByName(x.field)
		*x.into = protobufFieldNumber(sf.Tag)
	}
	return f
}()

// objectMetaField is the field number of an object type's ObjectMeta, from its protobuf tag;
// 0 when it has none.
func objectMetaField(item reflect.Type) fieldNumber {
	for i := range item.NumField() {
		if f := item.Field(i); f.Type == reflect.TypeOf(metav1.ObjectMeta{}) {
			return protobufFieldNumber(f.Tag)
		}
	}
	return 0
}

// scanProtobufMeta reads the namespace, name and resourceVersion of the object message b,
// whose ObjectMeta is field metaField. Every field of the message is walked, so that a
// message whose framing is broken is not vouched for; ok is false unless the metadata appears
// once, with name and resourceVersion once each and namespace at most once.
func scanProtobufMeta(b []byte, metaField fieldNumber) (m itemMeta, ok bool) {
	var metadata []byte
	seen := 0
	if metaField == 0 || !protoFields(b, func(num fieldNumber, typ uint64, v []byte) bool {
		if num != metaField {
			return true
		}
		metadata = v
		seen++
		return typ == wireBytes
	}) || seen != 1 {
		return itemMeta{}, false
	}
	var names, namespaces, rvs int
	f := objectMetaFields
	if !protoFields(metadata, func(num fieldNumber, typ uint64, v []byte) bool {
		switch num {
		case f.name:
			m.name, names = v, names+1
		case f.namespace:
			m.namespace, namespaces = v, namespaces+1
		case f.resourceVersion:
			m.resourceVersion, rvs = v, rvs+1
		default:
			return true
		}
		return typ == wireBytes
	}) || names != 1 || namespaces > 1 || rvs != 1 {
		return itemMeta{}, false
	}
	return m, true
}

// protobufEmbeddedMeta is the metadata of a protobuf watch frame's object: raw is the
// object's bytes as the frame carries them (scanProtobufWatchEvent), the raw envelope (the
// magic number, then a runtime.Unknown: typeMeta 1, raw 2, contentEncoding 3, contentType 4)
// around the object message. A watch frame does not name its object's Go type, so the
// metadata's field number is the one every Kubernetes object type (and PartialObjectMetadata)
// gives its ObjectMeta: 1. Not ok for anything repeated or an encoded object.
func protobufEmbeddedMeta(raw []byte) (itemMeta, bool) {
	if len(raw) < len(protobufMagic) || string(raw[:len(protobufMagic)]) != string(protobufMagic) {
		return itemMeta{}, false
	}
	var object []byte
	objects := 0
	if !protoFields(raw[len(protobufMagic):], func(num fieldNumber, wt uint64, v []byte) bool {
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
		return itemMeta{}, false
	}
	return scanProtobufMeta(object, 1)
}

// protoFields calls fn with every field of a message — its number, wire type and, for a
// length-delimited one, its bytes — and reports whether the message was well framed and fn
// accepted every field.
func protoFields(b []byte, fn func(num fieldNumber, typ uint64, v []byte) bool) bool {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 || key>>3 == 0 {
			return false
		}
		b = b[n:]
		num, typ := fieldNumber(key>>3), key&7
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
	if !protoFields(frame, func(num fieldNumber, wt uint64, v []byte) bool {
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
	if !protoFields(ext, func(num fieldNumber, wt uint64, v []byte) bool {
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

package pbwire

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
)

// AppendEnvelope appends obj as the API server writes a protobuf object to dst: Magic, then
// a runtime.Unknown whose TypeMeta is tm and whose raw is obj's protobuf, marshalled in place,
// as apimachinery's protobuf serializer does.
func AppendEnvelope(dst []byte, tm runtime.TypeMeta, obj runtime.ProtobufMarshaller) ([]byte, error) {
	unk := runtime.Unknown{TypeMeta: tm}
	size := uint64(obj.Size())
	total := unk.Size() + 1 + (bits.Len64(size|1)+6)/7 + int(size)
	start := len(dst)
	dst = slices.Grow(dst, len(Magic)+total)[:start+len(Magic)+total]
	copy(dst[start:], Magic)
	n, err := unk.NestedMarshalTo(dst[start+len(Magic):], obj, size)
	if err != nil {
		return nil, err
	}
	if n != total {
		return nil, fmt.Errorf("the envelope of a %T is %d bytes, not the %d computed", obj, n, total)
	}
	return dst, nil
}

// AppendEnvelopeRaw is AppendEnvelope around bytes already encoded, in contentType ("" for
// protobuf).
func AppendEnvelopeRaw(dst []byte, tm runtime.TypeMeta, raw []byte, contentType string) ([]byte, error) {
	unk := runtime.Unknown{TypeMeta: tm, Raw: raw, ContentType: contentType}
	start := len(dst)
	dst = slices.Grow(dst, len(Magic)+unk.Size())[:start+len(Magic)+unk.Size()]
	copy(dst[start:], Magic)
	if _, err := unk.MarshalToSizedBuffer(dst[start+len(Magic):]); err != nil {
		return nil, err
	}
	return dst, nil
}

// Unwrap reads an envelope Envelope or the API server wrote: its TypeMeta, the content type
// of its raw ("" for protobuf) and the raw object, a view into b. An envelope whose raw is
// encoded (contentEncoding), or whose fields repeat or are missing, is refused.
func Unwrap(b []byte) (tm runtime.TypeMeta, contentType string, raw []byte, err error) {
	if len(b) < len(Magic) || string(b[:len(Magic)]) != string(Magic) {
		return tm, "", nil, errors.New("not a protobuf object: no magic")
	}
	var typeMeta []byte
	var seen [5]int
	ok := protoFields(b[len(Magic):], func(num FieldNumber, wt uint64, v []byte) bool {
		if num < 1 || num > 4 || wt != wireBytes {
			return false
		}
		seen[num]++
		switch num {
		case 1:
			typeMeta = v
		case 2:
			raw = v
		case 3:
			return len(v) == 0
		case 4:
			contentType = string(v)
		}
		return true
	})
	if !ok || seen[1] > 1 || seen[2] != 1 || seen[4] > 1 {
		return tm, "", nil, errors.New("not a well-formed protobuf envelope (runtime.Unknown)")
	}
	if err := tm.Unmarshal(typeMeta); err != nil {
		return tm, "", nil, fmt.Errorf("the envelope's kind: %w", err)
	}
	return tm, contentType, raw, nil
}

package httpapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A watch frame is a metav1.WatchEvent whose object is a body of its own. Decoding the frame
// into a WatchEvent copies the object's bytes out of the frame, and the object is then decoded
// from the copy: every frame's object is read twice and held twice. For the built-in decoders
// the frame is instead read only as far as its type and its object's span (metadata_scan.go),
// and the object is decoded straight from the frame's buffer: once. That is safe because the
// object is decoded before the next frame is read into the buffer, and the built-in decoders
// copy whatever they keep (generated protobuf code, encoding/json and sigs.k8s.io/json all do).
// A decoder of the caller's own might keep the bytes it is given, so its frames are decoded
// into a WatchEvent first, as before; so is any frame whose type and object the scan does not
// vouch for (anything repeated, a type that is not a watch event's, an object that is null), so
// that it fails, or not, as before.

// directFrames decodes what its scan vouches for without decoding a WatchEvent, and everything
// else with d.
type directFrames struct {
	d    runtime.Decoder
	scan func(frame []byte) (typ, raw []byte, ok bool)
}

// directly wraps the frame decoder d when the transport's decoder is a built-in one.
func (t *Transport) directly(d runtime.Decoder, scan func([]byte) (typ, raw []byte, ok bool)) runtime.Decoder {
	if _, builtin := t.cfg.Decoder.(heldListStreamDecoder); !builtin {
		return d
	}
	return directFrames{d: d, scan: scan}
}

func (f directFrames) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if we, ok := into.(*metav1.WatchEvent); ok {
		if typ, raw, ok := f.scan(data); ok {
			if t, known := watchEventType(typ); known {
				we.Type, we.Object.Raw = t, raw
				return we, nil, nil
			}
		}
	}
	return f.d.Decode(data, defaults, into)
}

// watchEventType is the type of a watch event, as the constant string (no allocation).
func watchEventType(b []byte) (string, bool) {
	switch string(b) {
	case "ADDED":
		return "ADDED", true
	case "MODIFIED":
		return "MODIFIED", true
	case "DELETED":
		return "DELETED", true
	case "BOOKMARK":
		return "BOOKMARK", true
	case "ERROR":
		return "ERROR", true
	}
	return "", false
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

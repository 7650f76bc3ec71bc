package httpapi

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/jsonwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// A watch frame is a metav1.WatchEvent whose object is a body of its own. Decoding the frame
// into a WatchEvent copies the object's bytes out of the frame, and the object is then decoded
// from the copy: every frame's object is read twice and held twice. For the built-in decoders
// the frame is instead read only as far as its type and its object's span (its format's
// Frames.Scan), and the object is decoded straight from the frame's buffer: once. That is safe because the
// object is decoded before the next frame is read into the buffer, and the built-in decoders
// copy whatever they keep (generated protobuf code, encoding/json and sigs.k8s.io/json all do).
// A decoder of the caller's own might keep the bytes it is given, so its frames are decoded
// into a WatchEvent first, as before; so is any frame whose type and object the scan does not
// vouch for (anything repeated, a type that is not a watch event's, an object that is null), so
// that it fails, or not, as before.
//
// During a watch-list's initial state, the same one scan also finds the ADDED frames whose
// object the store holds at the same resourceVersion: such a frame is read only as far as its
// object's metadata, neither the WatchEvent nor its object is decoded, and the event goes on
// with its Key and ResourceVersion and no Object (docs/semantics.md, "Relists"). Each frame is
// scanned once, whatever it is used for.

// initialSkip leaves undecoded the ADDED frames of a watch-list's initial state whose object
// the store holds at the same resourceVersion. It ends with the bookmark that ends the initial
// state: the watch's own ADDED events are always decoded. A nil *initialSkip skips nothing.
type initialSkip struct {
	held  func(namespace, name string) (rv, uid string, ok bool)
	ended bool
	// kept is the frame the decoder just left undecoded, when has is set.
	kept struct{ key, rv string }
	has  bool
}

func (s *initialSkip) active() bool { return s != nil && !s.ended }

// take returns the frame the decoder left undecoded, if it did.
func (s *initialSkip) take() (kept struct{ key, rv string }, ok bool) {
	if s == nil || !s.has {
		return kept, false
	}
	s.has = false
	return s.kept, true
}

// seen follows the stream: the initial state's end ends the skipping.
func (s *initialSkip) seen(e *fsm.Event) {
	if s != nil && e.Type == fsm.Bookmark && e.InitialEventsEnd {
		s.ended = true
	}
}

// framesOf is the wire format of a watch body in the given media type (bodyMedia: JSON for
// anything that is not protobuf or CBOR).
func framesOf(media string) wire.Frames {
	switch media {
	case MediaProtobuf:
		return pbwire.Frames
	case MediaCBOR:
		return cborwire.Frames
	}
	return jsonwire.Frames
}

// frames is the frame decoder of a watch stream in format f: it scans each frame once, when
// it may use the scan — to hand its object over directly (a built-in decoder) or to leave an
// unchanged ADDED frame undecoded (skip) — and decodes everything else with f.Decode.
func (t *Transport) frames(f wire.Frames, skip *initialSkip) runtime.Decoder {
	_, builtin := t.cfg.Decoder.(heldListStreamDecoder)
	direct := builtin && f.Direct
	if !direct && skip == nil {
		return f.Decode
	}
	return watchFrames{f: f, direct: direct, skip: skip}
}

type watchFrames struct {
	f      wire.Frames
	direct bool
	skip   *initialSkip
}

func (w watchFrames) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if we, ok := into.(*metav1.WatchEvent); ok && (w.direct || w.skip.active()) {
		if typ, object, ok := w.f.Scan(data); ok {
			if s := w.skip; s.active() && string(typ) == "ADDED" {
				if m, ok := w.f.Meta(object); ok {
					if key, rv, ok := wire.Unchanged(s.held, m); ok {
						s.kept.key, s.kept.rv, s.has = key, rv, true
						return into, nil, nil
					}
				}
			}
			if t, known := watchEventType(typ); known && w.direct {
				we.Type, we.Object.Raw = t, object
				return we, nil, nil
			}
		}
	}
	return w.f.Decode.Decode(data, defaults, into)
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

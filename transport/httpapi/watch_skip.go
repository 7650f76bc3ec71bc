package httpapi

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/fsm"
)

// initialSkip leaves undecoded the ADDED frames of a watch-list's initial state whose object
// the store holds at the same resourceVersion: the frame is read only as far as its object's
// metadata (metadata_scan.go), neither the WatchEvent nor its object is decoded, and the event
// goes on with its Key and ResourceVersion and no Object (docs/semantics.md, "Relists"). It
// ends with the bookmark that ends the initial state: the watch's own ADDED events are always
// decoded. A nil *initialSkip skips nothing.
type initialSkip struct {
	held  func(namespace, name string) (string, bool)
	ended bool
	// kept is the frame the decoder just left undecoded, when has is set.
	kept struct{ key, rv string }
	has  bool
}

// frames wraps a watch frame decoder so that it leaves the frames it may skip undecoded;
// addedMeta reads an ADDED frame's object's metadata.
func (s *initialSkip) frames(d runtime.Decoder, addedMeta func(frame []byte) (itemMeta, bool)) runtime.Decoder {
	if s == nil {
		return d
	}
	return skippingFrames{s: s, d: d, addedMeta: addedMeta}
}

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

type skippingFrames struct {
	s         *initialSkip
	d         runtime.Decoder
	addedMeta func([]byte) (itemMeta, bool)
}

func (f skippingFrames) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if s := f.s; !s.ended {
		if m, ok := f.addedMeta(data); ok {
			if key, rv, ok := unchanged(s.held, m); ok {
				s.kept.key, s.kept.rv, s.has = key, rv, true
				return into, nil, nil
			}
		}
	}
	return f.d.Decode(data, defaults, into)
}

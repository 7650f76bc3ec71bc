// Package wire holds what the wire formats of the HTTP transport share; each format is a
// package of its own beside it (jsonwire, pbwire, cborwire) with the same parts: its LIST
// stream (StreamList), its metadata scan (ScanMeta), its watch frames (Frames) and its decode.
// A new format is a new package with those parts, and a case in httpapi's framesOf and in its
// decoders' media switch.
package wire

import (
	"fmt"
	"io"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// During a relist most items are objects the store already holds at the same resourceVersion;
// decoding them only for the store to drop the copy is what a relist's memory peak is made of
// (bench/RESULTS.md, "Relists"). So when the driver hands over the store's query, an item's
// namespace, name and resourceVersion are read from its bytes first, without decoding it and
// without allocating, and an item the store holds at that resourceVersion goes on as "key K
// unchanged" with no object (docs/semantics.md, "Relists"). The scanners vouch only for what
// the type decode would read the same way: an item whose metadata is missing, repeated, not a
// string, or otherwise unusual is decoded as before, so that it fails, or not, as before.

// Meta is what a relist needs of an item to tell whether the store holds it unchanged:
// views into the item's bytes (for a JSON string with escapes, a decoded copy). UID is empty
// when the item has none.
type Meta struct{ Namespace, Name, ResourceVersion, UID []byte }

// Unchanged reports whether held holds the item at the item's own non-empty resourceVersion
// and with its uid, with the key and resourceVersion of the event that says so. The uid is
// compared too: a resourceVersion names one version of one object within one history, and an
// object of the same name at the same resourceVersion in another history — a cluster created
// again at the same address — is another object (docs/semantics.md, "Persisted cache"). The
// key is the one allocation; the resourceVersion is the store's own string.
func Unchanged(held func(namespace, name string) (rv, uid string, ok bool), m Meta) (key, rv string, ok bool) {
	if len(m.Name) == 0 || len(m.ResourceVersion) == 0 {
		return "", "", false
	}
	v, uid, ok := held(BytesView(m.Namespace), BytesView(m.Name))
	if !ok || v != string(m.ResourceVersion) || uid != string(m.UID) {
		return "", "", false
	}
	if len(m.Namespace) == 0 {
		return string(m.Name), v, true
	}
	return string(m.Namespace) + "/" + string(m.Name), v, true
}

// BytesView is b as a string without a copy, for a lookup that does not keep it.
func BytesView(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Scheme knows the meta.k8s.io kinds the transport reads itself, whatever the decoder: a
// Status (error bodies, ERROR events) and PartialObjectMetadata (metadata-only requests).
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

// DecodeInto decodes a body or embedded object with d into into, which must be the kind the
// body says it is.
func DecodeInto(d runtime.Decoder, raw []byte, into runtime.Object) error {
	obj, gvk, err := d.Decode(raw, nil, into)
	if err != nil {
		return err
	}
	if obj != into {
		return fmt.Errorf("the body is a %s, not a %T", gvk.Kind, into)
	}
	return nil
}

// Frames is how the watch frames of one wire format are read.
type Frames struct {
	// Reader cuts a watch body into frames, one per Read.
	Reader func(body io.ReadCloser) io.ReadCloser
	// Decode decodes a frame into a metav1.WatchEvent with its object left raw: the general
	// way, for every frame Scan does not vouch for.
	Decode runtime.Decoder
	// Scan reads a frame as far as its type and its object's bytes; ok only when it vouches
	// for both (each once, well framed).
	Scan func(frame []byte) (typ, object []byte, ok bool)
	// Meta reads the namespace, name and resourceVersion of an object Scan found.
	Meta func(object []byte) (Meta, bool)
	// Direct: the object Scan finds is the bytes Decode would leave raw, so that a built-in
	// decoder may read it without the WatchEvent decode.
	Direct bool
}

// AddedMeta is the object's metadata of an ADDED frame.
func (f Frames) AddedMeta(frame []byte) (Meta, bool) {
	typ, object, ok := f.Scan(frame)
	if !ok || string(typ) != "ADDED" {
		return Meta{}, false
	}
	return f.Meta(object)
}

// Held is what lets a LIST leave undecoded the items the store holds unchanged (each format's
// ScanMeta): the store's query (Versions), and where such an item goes instead of being
// decoded (Kept).
type Held struct {
	Versions func(namespace, name string) (rv, uid string, ok bool)
	Kept     func(key, resourceVersion string) error
}

// Keep hands the item whose metadata a format's ScanMeta read (scanned: it could vouch for
// it) to Kept when the store holds it unchanged, and reports whether it did. A nil *Held keeps
// nothing.
func (h *Held) Keep(m Meta, scanned bool) (bool, error) {
	if h == nil || !scanned {
		return false, nil
	}
	key, rv, ok := Unchanged(h.Versions, m)
	if !ok {
		return false, nil
	}
	return true, h.Kept(key, rv)
}

// ItemError names the item of a list an error is about.
func ItemError(n int, err error) error {
	if err != nil {
		return fmt.Errorf("item %d: %w", n, err)
	}
	return nil
}

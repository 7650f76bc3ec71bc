// Package persist keeps a reflector's store on disk between runs: a snapshot of the objects,
// the resourceVersion they are consistent at, and the identity of what was watched, so a
// restarted controller can fill its store and resume its watch instead of listing everything
// again (docs/semantics.md, "Persisted cache").
//
// The package knows nothing of the machine or of Kubernetes types: a Codec turns objects into
// bytes and back (transport/httpapi provides one for each of its decoders), and a Store says
// where snapshots live (Dir, a directory, by default).
//
// # Format (version 1)
//
//	magic     8 bytes   "\x89RWSNAP\n"
//	version   uint16    big-endian, 1
//	hlen      uint32    big-endian, the header's length (at most MaxHeaderBytes)
//	header    hlen      JSON: identity, resourceVersion, written, mediaType, count
//	hcrc      uint32    CRC-32C of everything before it (magic to header)
//	count ×   uint32 length (at most MaxItemBytes), then the item as the codec wrote it
//	crc       uint32    CRC-32C of everything before it (magic to the last item)
//
// and nothing after. The header has its own checksum so that a snapshot of another identity
// is refused (and named as such) before any item is decoded, and a corrupted header is refused
// as corrupted rather than read as another identity.
package persist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Identity is what was watched; a snapshot for any other identity is never loaded.
type Identity struct {
	// Server is the server URL as the transport reaches it (scheme://host[:port][/prefix]).
	Server   string `json:"server"`
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// Namespace is "" for all namespaces.
	Namespace     string `json:"namespace"`
	LabelSelector string `json:"labelSelector"`
	FieldSelector string `json:"fieldSelector"`
	// Decoder says which decoder reads the items (e.g. "typed", "unstructured", "metadata")
	// and the codec's media type.
	Decoder string `json:"decoder"`
	// Shape is a fingerprint of the shape of what was saved — the Go type the decoder makes,
	// its fields and tags — so that a build whose type gained or lost a field refuses a
	// snapshot that would load objects without it.
	Shape string `json:"shape"`
	// Transform names the transform the objects went through before they were kept (the
	// caller's name and version for it; "" for none), so that objects transformed otherwise
	// are never served as this transform's.
	Transform string `json:"transform"`
}

// fields lists the identity's fields by name, in a fixed order: what a refusal names.
func (id Identity) fields() [10]struct{ name, value string } {
	return [10]struct{ name, value string }{
		{"server", id.Server}, {"group", id.Group}, {"version", id.Version}, {"resource", id.Resource},
		{"namespace", id.Namespace}, {"labelSelector", id.LabelSelector}, {"fieldSelector", id.FieldSelector},
		{"decoder", id.Decoder}, {"shape", id.Shape}, {"transform", id.Transform},
	}
}

// String names the identity for logs: "configmaps.v1 in default at https://host (typed …)".
func (id Identity) String() string {
	s := id.Resource + "." + id.Version
	if id.Group != "" {
		s += "." + id.Group
	}
	if id.Namespace != "" {
		s += " in " + id.Namespace
	}
	if id.LabelSelector != "" {
		s += " labels " + id.LabelSelector
	}
	if id.FieldSelector != "" {
		s += " fields " + id.FieldSelector
	}
	s += " at " + id.Server + " (" + id.Decoder
	if id.Transform != "" {
		s += ", transform " + id.Transform
	}
	return s + ")"
}

// Codec turns a stored object into bytes and back: the wire format the transport's decoder
// reads.
type Codec interface {
	// MediaType names the bytes Encode writes; a snapshot written in another is refused.
	MediaType() string
	Encode(obj any) ([]byte, error)
	// Decode must not keep raw: Load reuses the buffer for the next item.
	Decode(raw []byte) (any, error)
}

// AppendEncoder is a Codec that can encode into a buffer it is given: Save then reuses one
// buffer for every item instead of allocating each item's bytes.
type AppendEncoder interface {
	// AppendEncode appends obj's encoding to dst and returns the extended slice.
	AppendEncode(dst []byte, obj any) ([]byte, error)
}

// Store is where snapshots are kept: Dir by default; a controller can put them elsewhere.
type Store interface {
	// Open reads the snapshot of id; ErrNotFound (errors.Is) when there is none. A *Refused
	// error says the store will not hand this one out (Dir: a file others may write).
	Open(ctx context.Context, id Identity) (io.ReadCloser, error)
	// Create begins a new snapshot of id, which replaces the old one only at Commit,
	// atomically: until then, and after an Abort or a crash, Open gives the old one or none.
	Create(ctx context.Context, id Identity) (Pending, error)
}

// OrderedStore is a Store that several writers share — the replicas of one controller on one
// bucket — and that keeps the newest snapshot: Save tells it what it is about to write, so
// that it never replaces a snapshot at a later resourceVersion with one at an earlier
// (docs/semantics.md, "Persisted cache", "Shared by replicas").
type OrderedStore interface {
	Store
	// CreateFor is Create, told what the snapshot is. It returns ErrSuperseded, and so may
	// Commit, when the store holds a snapshot of id at least as new: nothing is written then.
	CreateFor(ctx context.Context, id Identity, info SnapshotInfo) (Pending, error)
}

// SnapshotInfo is what SaveSnapshot says of the snapshot it writes to an OrderedStore.
type SnapshotInfo struct {
	ResourceVersion string
	Written         time.Time
	Count           int
	// Disowned is the resourceVersion of the snapshot this writer loaded at its start and let
	// go of as not the server's (ahead of it, of another cluster at the same address,
	// unverifiable): an OrderedStore replaces a snapshot at that resourceVersion even when it
	// is ahead of this one, as it is no replica's newer work.
	Disowned string
}

// ErrSuperseded is an OrderedStore's answer when it holds a snapshot at least as new as the one
// offered, which it keeps: Save then succeeds with SaveStats.Superseded.
var ErrSuperseded = errors.New("persist: the store holds a snapshot at least as new")

// Pending is a snapshot being written.
type Pending interface {
	io.Writer
	// Commit makes what was written the snapshot, durably, in one step.
	Commit() error
	// Abort drops what was written; the old snapshot stays. Abort after Commit does nothing.
	Abort() error
}

// ErrNotFound is the answer of Open, and of Load, when there is no snapshot.
var ErrNotFound = errors.New("persist: no snapshot")

// Refused is why a snapshot was not loaded. Reason is one line, for a log.
type Refused struct {
	Reason string
	Err    error // what caused it, if an error did
}

func (r *Refused) Error() string { return "persist: snapshot refused: " + r.Reason }
func (r *Refused) Unwrap() error { return r.Err }

func refused(err error, format string, args ...any) *Refused {
	// One line, whatever the error it quotes says.
	lines := strings.FieldsFunc(fmt.Sprintf(format, args...), func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return &Refused{Reason: strings.Join(lines, " "), Err: err}
}

// Snapshot is a loaded snapshot.
type Snapshot struct {
	Identity        Identity
	ResourceVersion string
	Written         time.Time
	Items           []any // decoded with the codec
}

// SaveStats is what Save wrote.
type SaveStats struct {
	Count int   // items
	Bytes int64 // the whole snapshot (before sealing, when the store seals it)
	// Superseded says that the store (an OrderedStore) kept the snapshot it holds, which is at
	// least as new: another replica saved it. Nothing was written.
	Superseded bool
}

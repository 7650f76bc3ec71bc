package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/persist"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/jsonwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// ObjectEncoder is what a Decoder of the caller's own also implements so that its objects
// can be kept in a snapshot (package persist, docs/semantics.md "Persisted cache"). Without
// it, SnapshotCodec fails: the transport cannot write what only the caller's code reads.
type ObjectEncoder interface {
	// SnapshotMediaType is the media type EncodeObject writes, one DecodeObject reads.
	SnapshotMediaType() string
	// EncodeObject writes obj, an object the decoder returned, so that DecodeObject with
	// SnapshotMediaType gives an equal one back.
	EncodeObject(obj any) ([]byte, error)
}

// ErrNoSnapshotCodec is SnapshotCodec's answer for a Decoder of the caller's own that is not
// an ObjectEncoder.
var ErrNoSnapshotCodec = errors.New("no snapshot codec: the decoder is the caller's own and does not implement httpapi.ObjectEncoder")

// SnapshotCodec is how the objects this transport decodes are kept in a snapshot, in a wire
// format its decoder reads:
//   - Typed: kube-apiserver's protobuf envelope (Magic, then a runtime.Unknown naming the
//     group, version and kind — the transport's group and version, the scheme's kind) around
//     the object's protobuf; a type without protobuf code has its JSON in the envelope
//     (content type application/json). A typed object comes back without its apiVersion and
//     kind when it went as protobuf, as a LIST's items are decoded; as JSON, as it was.
//   - Metadata: the same envelope around a PartialObjectMetadata, whose kind is the object's
//     own: it comes back exactly as it was.
//   - Unstructured: CBOR, as kube-apiserver writes it. JSON would not give every object
//     back: a float with an integral value (1.0) is written 1 and read back as an int64.
//   - A Decoder of the caller's own: its ObjectEncoder, else ErrNoSnapshotCodec.
func (t *Transport) SnapshotCodec() (persist.Codec, error) {
	switch d := t.cfg.Decoder.(type) {
	case typedDecoder:
		return &typedCodec{scheme: d.scheme, gv: schema.GroupVersion{Group: t.cfg.Resource.Group, Version: t.cfg.Resource.Version}}, nil
	case metadataDecoder:
		return metadataCodec{}, nil
	case unstructuredDecoder:
		return unstructuredCodec{}, nil
	case ObjectEncoder:
		return callerCodec{enc: d, dec: t.cfg.Decoder}, nil
	}
	return nil, ErrNoSnapshotCodec
}

// SnapshotIdentity is what this transport watches, as a snapshot names it: the server URL,
// the resource with its namespace and selectors, the decoder with the media type its
// snapshot codec writes (and "metadata-only" when it asks for metadata only), and the shape of
// what the decoder makes (the Go type of a typed object, PartialObjectMetadata's; an
// unstructured object keeps every field the server sent, and a caller's decoder is named by
// its type and media type, which its author versions).
func (t *Transport) SnapshotIdentity() persist.Identity {
	r := t.cfg.Resource
	return persist.Identity{
		Server: trimSlash(t.cfg.Server), Group: r.Group, Version: r.Version, Resource: r.Resource,
		Namespace: r.Namespace, LabelSelector: r.LabelSelector, FieldSelector: r.FieldSelector,
		Decoder: t.snapshotDecoderName(), Shape: t.snapshotShape(),
	}
}

func (t *Transport) snapshotShape() string {
	switch d := t.cfg.Decoder.(type) {
	case typedDecoder:
		return typedShape(d.scheme, t.cfg.Resource)
	case metadataDecoder:
		return metadataShape
	case unstructuredDecoder:
		return "unstructured"
	}
	return "" // the decoder's name and media type say it
}

func (t *Transport) snapshotDecoderName() string {
	var name string
	switch d := t.cfg.Decoder.(type) {
	case typedDecoder:
		name = "typed " + MediaProtobuf
	case metadataDecoder:
		return "metadata " + MediaProtobuf // always metadata-only
	case unstructuredDecoder:
		name = "unstructured " + MediaCBOR
	case ObjectEncoder:
		name = fmt.Sprintf("%T %s", d, d.SnapshotMediaType())
	default:
		name = fmt.Sprintf("%T", d)
	}
	if t.cfg.MetadataOnly {
		name += " metadata-only"
	}
	return name
}

// typedCodec writes typed objects in the protobuf envelope. The kind of each Go type is looked
// up in the scheme once.
type typedCodec struct {
	scheme *runtime.Scheme
	gv     schema.GroupVersion
	kinds  sync.Map // reflect.Type → runtime.TypeMeta
}

func (*typedCodec) MediaType() string { return MediaProtobuf }

func (c *typedCodec) Encode(obj any) ([]byte, error) { return c.AppendEncode(nil, obj) }

// AppendEncode is Encode into dst (persist.AppendEncoder): Save reuses one buffer.
func (c *typedCodec) AppendEncode(dst []byte, obj any) ([]byte, error) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("a %T is not a runtime.Object", obj)
	}
	tm, err := c.typeMeta(o)
	if err != nil {
		return nil, err
	}
	// The envelope names the kind: the object's own TypeMeta is not in its protobuf, and is
	// left untouched (the store's object is shared; writing it would race with its readers).
	if m, ok := o.(runtime.ProtobufMarshaller); ok {
		return pbwire.AppendEnvelope(dst, tm, m)
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	return pbwire.AppendEnvelopeRaw(dst, tm, raw, runtime.ContentTypeJSON)
}

// typeMeta is the envelope's kind for o's Go type: the scheme's kind in the transport's group
// and version, or the scheme's first kind for the type if none is in it.
func (c *typedCodec) typeMeta(o runtime.Object) (runtime.TypeMeta, error) {
	t := reflect.TypeOf(o)
	if tm, ok := c.kinds.Load(t); ok {
		return tm.(runtime.TypeMeta), nil
	}
	gvks, _, err := c.scheme.ObjectKinds(o)
	if err != nil {
		return runtime.TypeMeta{}, err
	}
	gvk := gvks[0]
	for _, k := range gvks {
		if k.GroupVersion() == c.gv {
			gvk = k
			break
		}
	}
	tm := runtime.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	c.kinds.Store(t, tm)
	return tm, nil
}

// unmarshaler is a generated protobuf type's decode.
type unmarshaler interface{ Unmarshal([]byte) error }

func (c *typedCodec) Decode(b []byte) (any, error) {
	tm, contentType, raw, err := pbwire.Unwrap(b)
	if err != nil {
		return nil, err
	}
	obj, err := c.scheme.New(schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind))
	if err != nil {
		return nil, err
	}
	switch contentType {
	case "", runtime.ContentTypeProtobuf:
		u, ok := obj.(unmarshaler)
		if !ok {
			return nil, fmt.Errorf("%s %s has no protobuf decoding", tm.APIVersion, tm.Kind)
		}
		if err := u.Unmarshal(raw); err != nil {
			return nil, err
		}
	case runtime.ContentTypeJSON:
		if err := jsonwire.UnmarshalCaseSensitive(raw, obj); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("an envelope of %q, not protobuf or JSON", contentType)
	}
	return obj, nil
}

// metadataCodec writes PartialObjectMetadata in the protobuf envelope, with its own kind.
type metadataCodec struct{}

func (metadataCodec) MediaType() string { return MediaProtobuf }

func (c metadataCodec) Encode(obj any) ([]byte, error) { return c.AppendEncode(nil, obj) }

// AppendEncode is Encode into dst (persist.AppendEncoder).
func (metadataCodec) AppendEncode(dst []byte, obj any) ([]byte, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return nil, fmt.Errorf("a %T is not a *metav1.PartialObjectMetadata", obj)
	}
	return pbwire.AppendEnvelope(dst, runtime.TypeMeta{APIVersion: m.APIVersion, Kind: m.Kind}, m)
}

func (metadataCodec) Decode(b []byte) (any, error) {
	tm, contentType, raw, err := pbwire.Unwrap(b)
	if err != nil {
		return nil, err
	}
	if contentType != "" && contentType != runtime.ContentTypeProtobuf {
		return nil, fmt.Errorf("an envelope of %q, not protobuf", contentType)
	}
	m := &metav1.PartialObjectMetadata{}
	if err := m.Unmarshal(raw); err != nil {
		return nil, err
	}
	m.APIVersion, m.Kind = tm.APIVersion, tm.Kind
	return m, nil
}

// unstructuredCodec writes unstructured objects in CBOR.
type unstructuredCodec struct{}

func (unstructuredCodec) MediaType() string { return MediaCBOR }

func (c unstructuredCodec) Encode(obj any) ([]byte, error) { return c.AppendEncode(nil, obj) }

// AppendEncode is Encode into dst (persist.AppendEncoder).
func (unstructuredCodec) AppendEncode(dst []byte, obj any) ([]byte, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("a %T is not an *unstructured.Unstructured", obj)
	}
	b := bytes.NewBuffer(dst)
	if err := cborwire.Encode(u, b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (unstructuredCodec) Decode(raw []byte) (any, error) {
	return unstructuredDecoder{}.DecodeObject(MediaCBOR, raw)
}

// callerCodec is a caller's Decoder that is an ObjectEncoder.
type callerCodec struct {
	enc ObjectEncoder
	dec Decoder
}

func (c callerCodec) MediaType() string              { return c.enc.SnapshotMediaType() }
func (c callerCodec) Encode(obj any) ([]byte, error) { return c.enc.EncodeObject(obj) }

// Decode hands the decoder a copy: persist reuses the buffer, and a decoder of the caller's
// own may keep what it is given.
func (c callerCodec) Decode(raw []byte) (any, error) {
	return c.dec.DecodeObject(c.enc.SnapshotMediaType(), bytes.Clone(raw))
}

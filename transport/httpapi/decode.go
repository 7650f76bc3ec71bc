package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/jsonwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// Decoder turns response bodies into objects. A LIST's items come back as objects of their own,
// not pointers into the decoded list's array, so that the store holding some of them does not
// keep the whole array alive (client-go's reflector frees its lists the same way).
type Decoder interface {
	// MediaTypes are the body formats the decoder reads, best first (MediaProtobuf, MediaJSON,
	// MediaCBOR): what the transport asks the server for unless Config.Format forces one.
	MediaTypes() []string
	// DecodeList decodes a LIST response body in the given media type: its items,
	// resourceVersion and continue token.
	DecodeList(mediaType string, body []byte) (items []any, resourceVersion, continueToken string, err error)
	// DecodeObject decodes the object of one watch event, in the given media type.
	DecodeObject(mediaType string, raw []byte) (any, error)
}

// Unstructured decodes into *unstructured.Unstructured: any resource, no scheme needed. It asks
// for CBOR first, which kube-apiserver serves behind its CBORServingAndStorage feature gate,
// and JSON, which every server serves.
func Unstructured() Decoder { return unstructuredDecoder{} }

// unstructuredDecoder's apiVersion is the group and version the transport asks for, which the
// items of a CBOR list take when the list's own apiVersion comes after them (cborwire.StreamList).
type unstructuredDecoder struct{ apiVersion string }

func (unstructuredDecoder) MediaTypes() []string { return []string{MediaCBOR, MediaJSON} }

func (d unstructuredDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	if mediaType == MediaJSON {
		return collectList(func(r io.Reader, item func(any) error) (string, string, error) {
			return d.DecodeListStream(mediaType, r, item)
		}, bytes.NewReader(body))
	}
	var l unstructured.UnstructuredList
	if err := decodeUnstructured(mediaType, body, &l); err != nil {
		return nil, "", "", err
	}
	items := make([]any, len(l.Items))
	for i := range l.Items {
		items[i] = &unstructured.Unstructured{Object: l.Items[i].Object}
	}
	return items, l.GetResourceVersion(), l.GetContinue(), nil
}

func (unstructuredDecoder) DecodeObject(mediaType string, raw []byte) (any, error) {
	u := &unstructured.Unstructured{}
	if err := decodeUnstructured(mediaType, raw, u); err != nil {
		return nil, err
	}
	return u, nil
}

// decodeUnstructured reads a CBOR or JSON body into an unstructured object or list.
func decodeUnstructured(mediaType string, raw []byte, into interface {
	runtime.Object
	json.Unmarshaler
}) error {
	if err := only(mediaType, MediaCBOR, MediaJSON); err != nil {
		return err
	}
	if mediaType == MediaCBOR {
		return cborwire.Decode(raw, into)
	}
	return into.UnmarshalJSON(raw)
}

// only refuses a body in a media type the decoder did not ask for.
func only(mediaType string, readable ...string) error {
	for _, m := range readable {
		if m == mediaType {
			return nil
		}
	}
	return fmt.Errorf("the server answered %s, which this decoder does not read", mediaType)
}

// Typed decodes into the Go types registered in scheme (for example client-go's
// kubernetes/scheme.Scheme), so the store holds *corev1.ConfigMap rather than maps. It asks for
// protobuf first, as client-go's clientsets do when configured the way the control plane runs
// them: the server answers protobuf for built-in types and JSON for custom resources.
func Typed(scheme *runtime.Scheme) Decoder {
	return typedDecoder{scheme: scheme, d: serializer.NewCodecFactory(scheme).UniversalDeserializer()}
}

type typedDecoder struct {
	scheme *runtime.Scheme
	d      runtime.Decoder
}

func (typedDecoder) MediaTypes() []string { return []string{MediaProtobuf, MediaJSON} }

// The universal deserializer tells protobuf from JSON by the bytes (protobuf starts with its
// magic number); the media type is checked first so that a body can only be what the server
// said it was.
func (t typedDecoder) decode(mediaType string, raw []byte) (runtime.Object, error) {
	if err := only(mediaType, MediaProtobuf, MediaJSON); err != nil {
		return nil, err
	}
	if isProtobuf := bytes.HasPrefix(raw, pbwire.Magic); isProtobuf != (mediaType == MediaProtobuf) {
		return nil, fmt.Errorf("the body is not %s", mediaType)
	}
	obj, _, err := t.d.Decode(raw, nil, nil)
	return obj, err
}

func (t typedDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	return collectList(func(r io.Reader, item func(any) error) (string, string, error) {
		return t.DecodeListStream(mediaType, r, item)
	}, bytes.NewReader(body))
}

// decodeWholeList decodes the list in one piece, then copies each item into an allocation of
// its own (as client-go's ExtractListWithAlloc), so one cached object never pins its list.
func (t typedDecoder) decodeWholeList(mediaType string, body []byte) ([]any, string, string, error) {
	obj, err := t.decode(mediaType, body)
	if err != nil {
		return nil, "", "", err
	}
	lm, err := meta.ListAccessor(obj)
	if err != nil {
		return nil, "", "", fmt.Errorf("list response is a %T, not a list: %w", obj, err)
	}
	objs, err := meta.ExtractListWithAlloc(obj)
	if err != nil {
		return nil, "", "", err
	}
	items := make([]any, len(objs))
	for i, o := range objs {
		items[i] = o
	}
	return items, lm.GetResourceVersion(), lm.GetContinue(), nil
}

func (t typedDecoder) DecodeObject(mediaType string, raw []byte) (any, error) {
	return t.decode(mediaType, raw)
}

// Metadata decodes into *metav1.PartialObjectMetadata: what a server sends for a metadata-only
// request, in protobuf (for built-in and custom resources alike) or JSON, and what any object's
// JSON decodes to when only its metadata is kept. A transport with this decoder makes
// metadata-only requests, as if Config.MetadataOnly were set.
func Metadata() Decoder { return metadataDecoder{} }

type metadataDecoder struct{}

func (metadataDecoder) MediaTypes() []string { return []string{MediaProtobuf, MediaJSON} }

func (d metadataDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	return collectList(func(r io.Reader, item func(any) error) (string, string, error) {
		return d.DecodeListStream(mediaType, r, item)
	}, bytes.NewReader(body))
}

// decodeWholeMetadataList decodes a PartialObjectMetadataList in one piece.
func decodeWholeMetadataList(mediaType string, body []byte) ([]any, string, string, error) {
	var l metav1.PartialObjectMetadataList
	if err := decodeMetadata(mediaType, body, &l); err != nil {
		return nil, "", "", err
	}
	items := make([]any, len(l.Items))
	for i := range l.Items {
		item := l.Items[i]
		items[i] = &item
	}
	return items, l.ResourceVersion, l.Continue, nil
}

func (metadataDecoder) DecodeObject(mediaType string, raw []byte) (any, error) {
	m := &metav1.PartialObjectMetadata{}
	if err := decodeMetadata(mediaType, raw, m); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeMetadata reads a protobuf or JSON body into a PartialObjectMetadata or its list.
func decodeMetadata(mediaType string, raw []byte, into runtime.Object) error {
	if err := only(mediaType, MediaProtobuf, MediaJSON); err != nil {
		return err
	}
	if mediaType == MediaProtobuf {
		return pbwire.Decode(raw, into)
	}
	return jsonwire.UnmarshalCaseSensitive(raw, into)
}

// ErrFrameTooLarge ends a watch stream whose frame grows past Config.MaxFrameBytes.
var ErrFrameTooLarge = errors.New("watch frame exceeds the size limit")

// frameLimiter bounds the bytes read for one frame, so that an endless or oversized frame is
// cut off instead of growing the decoder's buffer without end. The decoder reads ahead, so the
// bound applies to a frame plus at most one read-ahead buffer.
type frameLimiter struct {
	r   io.ReadCloser
	n   int64
	max int64
}

func (l *frameLimiter) Read(p []byte) (int, error) {
	if l.n >= l.max {
		return 0, fmt.Errorf("%w (%d bytes)", ErrFrameTooLarge, l.max)
	}
	if rest := l.max - l.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

func (l *frameLimiter) Close() error { return l.r.Close() }

// frameDone starts the count for the next frame.
func (l *frameLimiter) frameDone() { l.n = 0 }

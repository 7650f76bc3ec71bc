package httpapi

import (
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// Decoder turns response bodies into objects. A LIST's items come back as objects of their own,
// not pointers into the decoded list's array, so that the store holding some of them does not
// keep the whole array alive (client-go's reflector frees its lists the same way).
type Decoder interface {
	// DecodeList decodes a LIST response: its items, resourceVersion and continue token.
	DecodeList(body []byte) (items []any, resourceVersion, continueToken string, err error)
	// DecodeObject decodes the object of one watch frame.
	DecodeObject(raw []byte) (any, error)
}

// Unstructured decodes into *unstructured.Unstructured: any resource, no scheme needed.
func Unstructured() Decoder { return unstructuredDecoder{} }

type unstructuredDecoder struct{}

func (unstructuredDecoder) DecodeList(body []byte) ([]any, string, string, error) {
	var l unstructured.UnstructuredList
	if err := l.UnmarshalJSON(body); err != nil {
		return nil, "", "", err
	}
	items := make([]any, len(l.Items))
	for i := range l.Items {
		items[i] = &unstructured.Unstructured{Object: l.Items[i].Object}
	}
	return items, l.GetResourceVersion(), l.GetContinue(), nil
}

func (unstructuredDecoder) DecodeObject(raw []byte) (any, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// Typed decodes into the Go types registered in scheme (for example client-go's
// kubernetes/scheme.Scheme), so the store holds *corev1.ConfigMap rather than maps.
func Typed(scheme *runtime.Scheme) Decoder {
	return typedDecoder{d: serializer.NewCodecFactory(scheme).UniversalDeserializer()}
}

type typedDecoder struct{ d runtime.Decoder }

func (t typedDecoder) DecodeList(body []byte) ([]any, string, string, error) {
	obj, _, err := t.d.Decode(body, nil, nil)
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

func (t typedDecoder) DecodeObject(raw []byte) (any, error) {
	obj, _, err := t.d.Decode(raw, nil, nil)
	return obj, err
}

// Metadata decodes into *metav1.PartialObjectMetadata: what a server sends for a metadata-only
// request, and what any object's JSON decodes to when only its metadata is kept.
func Metadata() Decoder { return metadataDecoder{} }

type metadataDecoder struct{}

func (metadataDecoder) DecodeList(body []byte) ([]any, string, string, error) {
	var l metav1.PartialObjectMetadataList
	if err := jsonUnmarshalStrictCase(body, &l); err != nil {
		return nil, "", "", err
	}
	items := make([]any, len(l.Items))
	for i := range l.Items {
		item := l.Items[i]
		items[i] = &item
	}
	return items, l.ResourceVersion, l.Continue, nil
}

func (metadataDecoder) DecodeObject(raw []byte) (any, error) {
	m := &metav1.PartialObjectMetadata{}
	if err := jsonUnmarshalStrictCase(raw, m); err != nil {
		return nil, err
	}
	return m, nil
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

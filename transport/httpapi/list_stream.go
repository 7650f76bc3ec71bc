package httpapi

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/cborwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/jsonwire"
	"github.com/rewatch/rewatch/transport/httpapi/internal/wire/pbwire"
)

// ListStreamDecoder is a Decoder that reads a LIST body as it arrives, one item at a time, so
// that neither the body nor the decoded list is held whole. The built-in decoders are all
// ListStreamDecoders; the transport reads the whole body and calls DecodeList for any other.
type ListStreamDecoder interface {
	Decoder
	// DecodeListStream reads a LIST body in the given media type from body, calls item with
	// each item, in order, as it is decoded, and returns the list's resourceVersion and continue
	// token once the body has been read to its end. An error from item ends the decode and is
	// returned as it is.
	DecodeListStream(mediaType string, body io.Reader, item func(obj any) error) (resourceVersion, continueToken string, err error)
}

var (
	_ ListStreamDecoder = typedDecoder{}
	_ ListStreamDecoder = metadataDecoder{}
	_ ListStreamDecoder = unstructuredDecoder{}
)

// heldListStreamDecoder is a built-in decoder: one that can leave unchanged items undecoded.
// A Decoder of the caller's own decodes every item: what it makes of an item is its own.
type heldListStreamDecoder interface {
	decodeListStreamHeld(mediaType string, body io.Reader, h *wire.Held, item func(any) error) (string, string, error)
}

// decodeListStream decodes a LIST body with d, item by item when d can, leaving undecoded
// what h says the store holds unchanged when d is a built-in decoder.
func decodeListStream(d Decoder, mediaType string, body io.Reader, h *wire.Held, item func(any) error) (string, string, error) {
	if hd, ok := d.(heldListStreamDecoder); ok {
		return hd.decodeListStreamHeld(mediaType, body, h, item)
	}
	if sd, ok := d.(ListStreamDecoder); ok {
		return sd.DecodeListStream(mediaType, body, item)
	}
	return decodeWholeBody(d, mediaType, body, item)
}

// decodeWholeBody reads the body to its end and decodes it in one piece with DecodeList.
func decodeWholeBody(d Decoder, mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	b, err := io.ReadAll(body)
	if err != nil {
		return "", "", err
	}
	items, rv, cont, err := d.DecodeList(mediaType, b)
	if err != nil {
		return "", "", &listBodyError{err: err, body: b}
	}
	for i, obj := range items {
		items[i] = nil // the store holds what it keeps; the slice need not
		if err := item(obj); err != nil {
			return "", "", err
		}
	}
	return rv, cont, nil
}

// listBodyError is a decode error of a body read whole; it keeps the body's start for the
// failure's message, as the transport reported before lists were streamed.
type listBodyError struct {
	err  error
	body []byte
}

func (e *listBodyError) Error() string { return fmt.Sprintf("%v (%s)", e.err, printable(e.body, 80)) }
func (e *listBodyError) Unwrap() error { return e.err }

// collectList decodes a LIST body into a slice, for the DecodeList of a ListStreamDecoder.
func collectList(decode func(io.Reader, func(any) error) (string, string, error), body io.Reader) ([]any, string, string, error) {
	items := []any{}
	rv, cont, err := decode(body, func(obj any) error { items = append(items, obj); return nil })
	var whole *listBodyError
	if errors.As(err, &whole) {
		err = whole.err // the caller has the body
	}
	if err != nil {
		return nil, "", "", err
	}
	return items, rv, cont, nil
}

func (t typedDecoder) DecodeListStream(mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	return t.decodeListStreamHeld(mediaType, body, nil, item)
}

func (t typedDecoder) decodeListStreamHeld(mediaType string, body io.Reader, h *wire.Held, item func(any) error) (string, string, error) {
	switch mediaType {
	case MediaProtobuf:
		rv, cont, rest, err := pbwire.StreamList(t.scheme, body, h, item)
		if !errors.Is(err, pbwire.ErrNotStreamable) {
			return rv, cont, err
		}
		return decodeWholeBody(wholeListDecoder{t}, mediaType, rest, item)
	case MediaJSON:
		var items jsonItemType
		l, err := jsonwire.StreamList(body, func(l *jsonwire.List, raw []byte) error {
			// The list's kind is checked whether or not the item is decoded.
			if _, err := items.resolve(t, l); err != nil {
				return err
			}
			if kept, err := h.Keep(jsonwire.ScanMeta(raw)); kept || err != nil {
				return err
			}
			obj, err := items.decode(t, l, raw)
			if err != nil {
				return err
			}
			return item(obj)
		})
		if err != nil {
			return "", "", err
		}
		return l.Meta.ResourceVersion, l.Meta.Continue, nil
	}
	return "", "", only(mediaType, MediaProtobuf, MediaJSON)
}

// jsonItemType is the item type of a typed JSON list, resolved from the list's kind once per
// list rather than once per item; it is resolved again only if the kind changes.
type jsonItemType struct {
	resolved         bool
	apiVersion, kind string
	typ              reflect.Type
	err              error
}

func (j *jsonItemType) resolve(t typedDecoder, l *jsonwire.List) (reflect.Type, error) {
	if !j.resolved || j.apiVersion != l.APIVersion || j.kind != l.Kind {
		j.resolved, j.apiVersion, j.kind = true, l.APIVersion, l.Kind
		j.typ, j.err = t.jsonItemType(l)
	}
	return j.typ, j.err
}

func (t typedDecoder) jsonItemType(l *jsonwire.List) (reflect.Type, error) {
	gv, err := schema.ParseGroupVersion(l.APIVersion)
	if err != nil {
		return nil, err
	}
	list, err := t.scheme.New(gv.WithKind(l.Kind))
	if err != nil {
		return nil, err
	}
	typ, ok := listItemType(list)
	if !ok {
		return nil, fmt.Errorf("list response is a %T, not a list", list)
	}
	return typ, nil
}

// decode decodes one item of a typed JSON list into the list type's item type, as decoding
// the whole list and copying its items out would.
func (j *jsonItemType) decode(t typedDecoder, l *jsonwire.List, raw []byte) (any, error) {
	typ, err := j.resolve(t, l)
	if err != nil {
		return nil, err
	}
	obj := reflect.New(typ).Interface()
	if err := jsonwire.UnmarshalCaseSensitive(raw, obj); err != nil {
		return nil, err
	}
	if ext, ok := obj.(*runtime.RawExtension); ok {
		// A v1.List holds raw items; meta.ExtractListWithAlloc hands them out this way.
		switch {
		case ext.Object != nil:
			return ext.Object, nil
		case ext.Raw != nil:
			return &runtime.Unknown{Raw: ext.Raw}, nil
		}
		return nil, nil
	}
	return obj, nil
}

// listItemType is the item struct of a list type: T for Items []T or []*T.
func listItemType(list runtime.Object) (reflect.Type, bool) {
	t := reflect.TypeOf(list)
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f, ok := t.Elem().FieldByName("Items")
	if !ok || f.Type.Kind() != reflect.Slice {
		return nil, false
	}
	item := f.Type.Elem()
	if item.Kind() == reflect.Pointer {
		item = item.Elem()
	}
	return item, item.Kind() == reflect.Struct
}

// wholeListDecoder is a typed decoder that decodes lists only in one piece.
type wholeListDecoder struct{ typedDecoder }

func (w wholeListDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	return w.decodeWholeList(mediaType, body)
}

func (d metadataDecoder) DecodeListStream(mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	return d.decodeListStreamHeld(mediaType, body, nil, item)
}

func (metadataDecoder) decodeListStreamHeld(mediaType string, body io.Reader, h *wire.Held, item func(any) error) (string, string, error) {
	switch mediaType {
	case MediaProtobuf:
		rv, cont, rest, err := pbwire.StreamList(wire.Scheme, body, h, item)
		if !errors.Is(err, pbwire.ErrNotStreamable) {
			return rv, cont, err
		}
		return decodeWholeBody(wholeMetadataDecoder{}, mediaType, rest, item)
	case MediaJSON:
		l, err := jsonwire.StreamList(body, func(_ *jsonwire.List, raw []byte) error {
			if kept, err := h.Keep(jsonwire.ScanMeta(raw)); kept || err != nil {
				return err
			}
			m := &metav1.PartialObjectMetadata{}
			if err := jsonwire.UnmarshalCaseSensitive(raw, m); err != nil {
				return err
			}
			return item(m)
		})
		if err != nil {
			return "", "", err
		}
		return l.Meta.ResourceVersion, l.Meta.Continue, nil
	}
	return "", "", only(mediaType, MediaProtobuf, MediaJSON)
}

// wholeMetadataDecoder is the metadata decoder that decodes lists only in one piece.
type wholeMetadataDecoder struct{ metadataDecoder }

func (wholeMetadataDecoder) DecodeList(mediaType string, body []byte) ([]any, string, string, error) {
	return decodeWholeMetadataList(mediaType, body)
}

func (d unstructuredDecoder) DecodeListStream(mediaType string, body io.Reader, item func(any) error) (string, string, error) {
	return d.decodeListStreamHeld(mediaType, body, nil, item)
}

func (d unstructuredDecoder) decodeListStreamHeld(mediaType string, body io.Reader, h *wire.Held, item func(any) error) (string, string, error) {
	if err := only(mediaType, MediaCBOR, MediaJSON); err != nil {
		return "", "", err
	}
	if mediaType == MediaCBOR {
		l, err := cborwire.StreamList(body, d.apiVersion, h, item)
		if err != nil {
			return "", "", err
		}
		return l.ResourceVersion, l.Continue, nil
	}
	l, err := jsonwire.StreamList(body, func(l *jsonwire.List, raw []byte) error {
		if kept, err := h.Keep(jsonwire.ScanMeta(raw)); kept || err != nil {
			return err
		}
		obj, err := decodeUnstructuredItem(l, raw)
		if err != nil {
			return err
		}
		return item(obj)
	})
	if err == nil && l.Kind == "" {
		err = errors.New("Object 'Kind' is missing in the list")
	}
	if err != nil {
		return "", "", err
	}
	return l.Meta.ResourceVersion, l.Meta.Continue, nil
}

// decodeUnstructuredItem decodes one item of a JSON list as apimachinery's UnstructuredList
// does: numbers as int64 where they are integers, and an item without kind and apiVersion (a
// built-in type's list leaves them out) given the list's, with "List" cut from the kind.
func decodeUnstructuredItem(l *jsonwire.List, raw []byte) (*unstructured.Unstructured, error) {
	m := map[string]any{}
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" && u.GetAPIVersion() == "" {
		u.SetKind(strings.TrimSuffix(l.Kind, "List"))
		u.SetAPIVersion(l.APIVersion)
	}
	return u, nil
}

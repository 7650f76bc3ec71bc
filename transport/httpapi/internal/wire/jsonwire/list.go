package jsonwire

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// A JSON LIST body is read with encoding/json's Decoder token API: the list's own fields are
// read as tokens, and each element of "items" is read into one reused buffer and decoded into
// an object of its own before the next is read, so that neither the body nor the decoded list
// is ever held whole (docs/design.md, "Streaming LIST decode"). The token API is in the
// standard library and reads from an io.Reader with a buffer of its own that grows only to the
// largest single value it holds: one item, not the list.

// List is what a JSON list says about itself.
type List struct {
	APIVersion, Kind string
	Meta             metav1.ListMeta
}

// itemsFirst says the list's kind was not yet known when its items arrived: the items are then
// held, undecoded, until the end of the body. kube-apiserver writes kind and apiVersion first,
// so this is the path of other servers only.
func (l *List) kindKnown() bool { return l.Kind != "" && l.APIVersion != "" }

// ErrNotList is the error for a body that is JSON but not an object.
var ErrNotList = errors.New("the body is not a JSON object")

// StreamList reads a JSON list from body and calls item with the raw bytes of each
// element of "items", in order, once the list's kind is known; raw is only valid during the
// call. It returns the list's own fields once the body has been read to its end.
func StreamList(body io.Reader, item func(l *List, raw []byte) error) (*List, error) {
	dec := json.NewDecoder(body)
	l := &List{}
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var (
		raw     json.RawMessage
		pending []json.RawMessage
		n       int
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		switch key {
		case "kind":
			err = decodeJSONString(dec, &l.Kind)
		case "apiVersion":
			err = decodeJSONString(dec, &l.APIVersion)
		case "metadata":
			if err = dec.Decode(&raw); err == nil && string(raw) != "null" {
				err = UnmarshalCaseSensitive(raw, &l.Meta)
			}
		case "items":
			err = eachJSONElement(dec, &raw, func() error {
				defer func() { n++ }()
				if !l.kindKnown() {
					pending = append(pending, append(json.RawMessage(nil), raw...))
					return nil
				}
				return wire.ItemError(n, item(l, raw))
			})
		default:
			err = dec.Decode(&raw)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("data after the list")
		}
		return nil, err
	}
	for i, raw := range pending {
		if err := wire.ItemError(i, item(l, raw)); err != nil {
			return nil, err
		}
		pending[i] = nil
	}
	return l, nil
}

// eachJSONElement calls fn with every element of the array the decoder is at, read into raw;
// null is an empty array, as encoding/json reads it.
func eachJSONElement(dec *json.Decoder, raw *json.RawMessage, fn func() error) error {
	tok, err := dec.Token()
	switch {
	case err != nil:
		return err
	case tok == nil:
		return nil
	case tok != json.Delim('['):
		return fmt.Errorf("is %v, not an array", tok)
	}
	for dec.More() {
		if err := dec.Decode(raw); err != nil {
			return err
		}
		if err := fn(); err != nil {
			return err
		}
	}
	return expectDelim(dec, ']')
}

func decodeJSONString(dec *json.Decoder, s *string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case string:
		*s = v
	case nil:
		*s = ""
	default:
		return fmt.Errorf("is %v, not a string", tok)
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if tok != want {
		if want == '{' {
			return ErrNotList
		}
		return fmt.Errorf("expected %v, found %v", want, tok)
	}
	return nil
}

// UnmarshalCaseSensitive decodes the way apimachinery's serializers do: case-sensitive keys,
// so that "Type" and "type" are not confused.
func UnmarshalCaseSensitive(data []byte, v any) error {
	return kjson.UnmarshalCaseSensitivePreserveInts(data, v)
}

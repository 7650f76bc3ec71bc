package pbwire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// A protobuf LIST body is read from the response as it arrives: the envelope's fields one by
// one, then, inside the list message, each item's bytes into one reused buffer, unmarshalled
// into an allocation of its own with the item type's generated Unmarshal (which copies what it
// keeps) before the next item is read. Only one item's bytes are ever held. kube-apiserver
// writes the envelope's kind before the list, and the list's metadata before its items; when
// the kind comes after the list, or the kind is not a list type of the scheme with a protobuf
// layout, the body read so far and the rest of the stream go to apimachinery's whole-list
// decode instead, which also names what is wrong.

// protoStream reads protobuf wire data from a buffered stream; left bounds the message being
// read (-1: the body, which ends at EOF).
type protoStream struct {
	br   *bufio.Reader
	left int64
	buf  []byte
}

func (p *protoStream) ReadByte() (byte, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	b, err := p.br.ReadByte()
	if err != nil {
		return 0, err
	}
	if p.left > 0 {
		p.left--
	}
	return b, nil
}

// The stream is read as generated Unmarshal code (the whole-list decode) reads a message, so
// that the two accept the same bodies: a varint is up to ten bytes with the bits past the 64th
// dropped, a key's field number is its low 32 bits, and group fields are skipped.

// uvarint reads a varint; io.EOF only when the stream ended before its first byte.
func (p *protoStream) uvarint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := p.ReadByte()
		if err != nil {
			if shift > 0 && errors.Is(err, io.EOF) {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errVarintOverflow
}

var errVarintOverflow = errors.New("protobuf varint longer than ten bytes")

// key reads a field's key; io.EOF means the message ended cleanly between fields.
func (p *protoStream) key() (FieldNumber, uint64, error) {
	k, err := p.uvarint()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, 0, io.EOF
		}
		return 0, 0, truncated(err)
	}
	num, typ, ok := splitKey(k)
	if !ok {
		return 0, 0, errTruncated
	}
	return num, typ, nil
}

// length reads a length-delimited field's length and checks it fits the message.
func (p *protoStream) length() (int64, error) {
	l, err := p.uvarint()
	if err != nil {
		return 0, truncated(err)
	}
	if l > 1<<62 || (p.left >= 0 && int64(l) > p.left) {
		return 0, errTruncated
	}
	return int64(l), nil
}

// bytes reads n bytes into the reused buffer; the result is valid until the next call. A large
// length grows the buffer as bytes actually arrive, so a hostile length costs no allocation of
// its size.
func (p *protoStream) bytes(n int64) ([]byte, error) {
	if n <= 1<<20 {
		if int64(cap(p.buf)) < n {
			p.buf = make([]byte, n)
		}
		b := p.buf[:n]
		if _, err := io.ReadFull(p.br, b); err != nil {
			return nil, truncated(err)
		}
		p.consumed(n)
		return b, nil
	}
	var w bytes.Buffer
	if _, err := io.CopyN(&w, p.br, n); err != nil {
		return nil, truncated(err)
	}
	p.consumed(n)
	p.buf = w.Bytes()
	return p.buf, nil
}

func (p *protoStream) consumed(n int64) {
	if p.left > 0 {
		p.left -= n
	}
}

// skip passes over a field of the given wire type whose key was read. A group's fields are
// passed over up to the end group that balances its start, as generated code does, which does
// not match their field numbers.
func (p *protoStream) skip(typ uint64) error {
	for depth := 0; ; {
		switch typ {
		case wireStartGroup:
			depth++
		case wireEndGroup:
			if depth == 0 {
				return errTruncated
			}
			depth--
		default:
			if err := p.skipValue(typ); err != nil {
				return err
			}
		}
		if depth == 0 {
			return nil
		}
		k, err := p.uvarint()
		if err != nil {
			return truncated(err)
		}
		typ = k & 7
	}
}

// skipValue passes over a value of a wire type other than a group's.
func (p *protoStream) skipValue(typ uint64) error {
	var n int64
	switch typ {
	case wireVarint:
		_, err := p.uvarint()
		return truncated(err)
	case wireFixed64:
		n = 8
	case wireFixed32:
		n = 4
	case wireBytes:
		l, err := p.length()
		if err != nil {
			return err
		}
		n = l
	default:
		return errTruncated
	}
	if p.left >= 0 && n > p.left {
		return errTruncated
	}
	if _, err := io.CopyN(io.Discard, p.br, n); err != nil {
		return truncated(err)
	}
	p.consumed(n)
	return nil
}

// truncated turns the end of the stream in the middle of a field into errTruncated; a read
// error stays itself (the caller tells a broken connection from a malformed body).
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTruncated
	}
	return err
}

// recordingReader keeps a copy of what is read through it until stop, so that a body found
// not to fit the item-by-item decode can be handed whole to the general decoder.
type recordingReader struct {
	r   io.Reader
	rec *bytes.Buffer
}

func (r *recordingReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	if r.rec != nil {
		r.rec.Write(b[:n])
	}
	return n, err
}

// rest is the body from its first byte: what was recorded, then what was not yet read.
func (r *recordingReader) rest() io.Reader {
	return io.MultiReader(bytes.NewReader(r.rec.Bytes()), r.r)
}

// StreamList decodes a protobuf LIST body from body item by item, calling item with
// each. When the body does not fit the item-by-item decode it returns ErrNotStreamable and
// rest, the body from its first byte, before any item was handed over.
func StreamList(scheme *runtime.Scheme, body io.Reader, h *wire.Held, item func(any) error) (rv, cont string, rest io.Reader, err error) {
	rec := &recordingReader{r: body, rec: &bytes.Buffer{}}
	p := &protoStream{br: bufio.NewReaderSize(rec, 32<<10), left: -1}
	var magic [4]byte
	if _, err := io.ReadFull(p.br, magic[:]); err != nil || !bytes.Equal(magic[:], Magic) {
		return "", "", rec.rest(), ErrNotStreamable
	}
	var (
		gvk      schema.GroupVersionKind
		streamed bool
		lm       metav1.ListMeta
	)
	for {
		num, typ, err := p.key()
		switch {
		case errors.Is(err, io.EOF):
			if !streamed {
				return "", "", rec.rest(), ErrNotStreamable
			}
			return lm.ResourceVersion, lm.Continue, nil, nil
		case err != nil:
			if !streamed {
				return "", "", rec.rest(), ErrNotStreamable
			}
			return "", "", nil, fmt.Errorf("decoding the %s: %w", gvk.Kind, err)
		}
		switch {
		case num == 1 && typ == wireBytes && !streamed: // typeMeta
			l, err := p.length()
			if err != nil {
				return "", "", rec.rest(), ErrNotStreamable
			}
			b, err := p.bytes(l)
			if err != nil {
				return "", "", rec.rest(), ErrNotStreamable
			}
			if gvk, err = envelopeKind(b); err != nil {
				return "", "", rec.rest(), ErrNotStreamable
			}
		case num == 1 && typ == wireBytes: // a typeMeta after the list message
			// Protobuf merges a repeated message field, so a whole decode would read the list
			// as the kind they make together; its items went out as the first kind already.
			return "", "", nil, fmt.Errorf("decoding the %s: %w", gvk.Kind, errTypeAfterList)
		case num == 2 && typ == wireBytes: // raw: the list message
			if streamed {
				return "", "", nil, fmt.Errorf("decoding the %s: %w", gvk.Kind, errRepeatedList)
			}
			layout, ok := streamableList(scheme, gvk)
			if !ok {
				return "", "", rec.rest(), ErrNotStreamable
			}
			l, err := p.length()
			if err != nil {
				return "", "", rec.rest(), ErrNotStreamable
			}
			rec.rec, streamed = nil, true
			if err := p.streamListMessage(l, layout, gvk, &lm, h, item); err != nil {
				return "", "", nil, fmt.Errorf("decoding the %s: %w", gvk.Kind, err)
			}
		default: // contentEncoding and contentType, which apimachinery's decode ignores too
			if err := p.skip(typ); err != nil {
				if !streamed {
					return "", "", rec.rest(), ErrNotStreamable
				}
				return "", "", nil, fmt.Errorf("decoding the %s: %w", gvk.Kind, err)
			}
		}
	}
}

// errRepeatedList and errTypeAfterList refuse envelopes no server writes, where a whole decode
// (the last list message wins; typeMeta fields merge) would read another list than the one
// whose items were handed over already.
var (
	errRepeatedList  = errors.New("the envelope holds more than one list message")
	errTypeAfterList = errors.New("the envelope's typeMeta follows its list message")
)

// streamListMessage reads the list message of length l: its metadata into lm, each item to
// item, or to h when the store holds it unchanged.
func (p *protoStream) streamListMessage(l int64, layout protobufListLayout, gvk schema.GroupVersionKind, lm *metav1.ListMeta, h *wire.Held, item func(any) error) error {
	p.left = l
	defer func() { p.left = -1 }()
	n := 0
	for {
		num, typ, err := p.key()
		switch {
		case errors.Is(err, io.EOF):
			if p.left != 0 {
				return errTruncated
			}
			return nil
		case err != nil:
			return err
		}
		if typ != wireBytes || (num != layout.metaField && num != layout.itemsField) {
			if err := p.skip(typ); err != nil {
				return err
			}
			continue
		}
		size, err := p.length()
		if err != nil {
			return err
		}
		b, err := p.bytes(size)
		if err != nil {
			return err
		}
		if num == layout.metaField {
			if err := lm.Unmarshal(b); err != nil {
				return err
			}
			continue
		}
		if kept, err := h.Keep(ScanMeta(b, layout.itemMeta)); kept || err != nil {
			n++
			if err != nil {
				return err
			}
			continue
		}
		obj := reflect.New(layout.item).Interface()
		if err := obj.(protoUnmarshaler).Unmarshal(b); err != nil {
			return fmt.Errorf("item %d of the %s: %w", n, gvk.Kind, err)
		}
		n++
		if err := item(obj); err != nil {
			return err
		}
	}
}

// envelopeKind reads the kind from the envelope's typeMeta field.
func envelopeKind(b []byte) (schema.GroupVersionKind, error) {
	var gvk schema.GroupVersionKind
	err := eachField(b, func(num FieldNumber, v []byte) error {
		switch num {
		case 1:
			gv, err := schema.ParseGroupVersion(string(v))
			if err != nil {
				return err
			}
			gvk.Group, gvk.Version = gv.Group, gv.Version
		case 2:
			gvk.Kind = string(v)
		}
		return nil
	})
	return gvk, err
}

// streamableList is the protobuf layout of gvk's list type, when scheme knows it and it has one.
func streamableList(scheme *runtime.Scheme, gvk schema.GroupVersionKind) (protobufListLayout, bool) {
	if gvk.Kind == "" {
		return protobufListLayout{}, false
	}
	list, err := scheme.New(gvk)
	if err != nil {
		return protobufListLayout{}, false
	}
	return listLayout(list)
}

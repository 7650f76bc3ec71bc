package cborwire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// A CBOR LIST body is read as it arrives, like a JSON one (docs/design.md, "Streaming LIST
// decode"): the list's own fields are read one data item at a time, and each element of
// "items" is copied whole into one reused buffer and decoded before the next is read.
// apimachinery's CBOR decoding has no streaming form, so the reader below only finds where
// each data item ends (RFC 8949's well-formedness rules); every item is then decoded by
// apimachinery's own serializer, wrapped as a one-item list, so that an item comes out exactly
// as the whole list's decode would give it — the same numbers, the same kind and apiVersion
// taken from the list, the same errors.
//
// kube-apiserver writes CBOR with its map keys in bytewise order, so a list's "kind" comes
// first, then "items", "metadata" and, last, "apiVersion". An item of a built-in type carries
// no apiVersion and takes the list's, which arrives after it: such items take the group and
// version the request asked for (the server answers in it), and a list whose apiVersion turns
// out to differ fails. An item that needs the list's kind before it is known is held,
// undecoded, until the end of the body, as in a JSON list.

// List is what a CBOR list says about itself.
type List struct {
	APIVersion, Kind          string
	ResourceVersion, Continue string
}

// StreamList reads a CBOR list from body and calls item with each element of "items",
// decoded, in order. asked is the apiVersion the request asked for ("" if unknown).
// Items the store holds unchanged (h) are handed to h undecoded.
func StreamList(body io.Reader, asked string, h *wire.Held, item func(any) error) (*List, error) {
	r := newCBORReader(body)
	if err := r.skipSelfDescribed(); err != nil {
		return nil, err
	}
	entries, err := r.header(cborMap)
	if err != nil {
		return nil, err
	}
	l := &List{}
	var (
		pending  [][]byte
		assumed  string // the apiVersion items were decoded with before the list's arrived
		n        int
		key, raw []byte
		wrapped  bytes.Buffer // each item as a one-item list, reused from item to item
	)
	decodeItem := func(raw []byte) error {
		apiVersion := l.APIVersion
		if apiVersion == "" {
			apiVersion, assumed = asked, asked
		}
		obj, err := decodeCBORListItem(&wrapped, l.Kind, apiVersion, raw)
		if err != nil {
			return err
		}
		return item(obj)
	}
	// takeItem hands an item the store holds unchanged to h undecoded, and decodes any other.
	takeItem := func(raw []byte) error {
		if kept, err := h.Keep(ScanMeta(raw)); kept || err != nil {
			return err
		}
		return decodeItem(raw)
	}
	for i := 0; entries < 0 || i < entries; i++ {
		if entries < 0 {
			if end, err := r.atBreak(); err != nil || end {
				if err != nil {
					return nil, err
				}
				break
			}
		}
		if key, err = r.item(key[:0], 0); err != nil {
			return nil, err
		}
		var name string
		if err := direct.Unmarshal(key, &name); err != nil {
			return nil, fmt.Errorf("a key of the list is not a string: %w", err)
		}
		switch name {
		case "kind", "apiVersion":
			if raw, err = r.item(raw[:0], 0); err == nil {
				s := &l.Kind
				if name == "apiVersion" {
					s = &l.APIVersion
				}
				err = cborString(raw, s)
			}
		case "metadata":
			if raw, err = r.item(raw[:0], 0); err == nil {
				err = l.readMeta(raw)
			}
		case "items":
			err = r.eachElement(&raw, func(raw []byte) error {
				defer func() { n++ }()
				if l.Kind == "" || (l.APIVersion == "" && asked == "") {
					pending = append(pending, bytes.Clone(raw))
					return nil
				}
				return wire.ItemError(n, takeItem(raw))
			})
		default:
			raw, err = r.item(raw[:0], 0)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if l.Kind == "" {
		return nil, errors.New("Object 'Kind' is missing in the list")
	}
	if assumed != "" && l.APIVersion != assumed {
		return nil, fmt.Errorf("the list's apiVersion is %q, but its items came before it and were read as the %q the request asked for", l.APIVersion, assumed)
	}
	for i, raw := range pending {
		if err := wire.ItemError(i, takeItem(raw)); err != nil {
			return nil, err
		}
		pending[i] = nil
	}
	return l, nil
}

func (l *List) readMeta(raw []byte) error {
	var m map[string]any
	if err := direct.Unmarshal(raw, &m); err != nil {
		return err
	}
	l.ResourceVersion, _, _ = unstructured.NestedString(m, "resourceVersion")
	l.Continue, _, _ = unstructured.NestedString(m, "continue")
	return nil
}

func cborString(raw []byte, s *string) error {
	var v any
	if err := direct.Unmarshal(raw, &v); err != nil {
		return err
	}
	switch v := v.(type) {
	case string:
		*s = v
	case nil:
		*s = ""
	default:
		return fmt.Errorf("is %T, not a string", v)
	}
	return nil
}

// decodeCBORListItem decodes one item of a CBOR list with apimachinery's serializer, as the
// one item of a list of the given kind and apiVersion written into b. b is reused for the next
// item: the decode copies what it keeps (strings, maps), so nothing refers to it afterwards.
func decodeCBORListItem(b *bytes.Buffer, kind, apiVersion string, raw []byte) (*unstructured.Unstructured, error) {
	b.Reset()
	b.Write(Magic)
	b.WriteByte(cborMap<<5 | 3)
	for _, kv := range [][2]string{{"kind", kind}, {"apiVersion", apiVersion}} {
		writeCBORText(b, kv[0])
		writeCBORText(b, kv[1])
	}
	writeCBORText(b, "items")
	b.WriteByte(cborArray<<5 | 1)
	b.Write(raw)
	var l unstructured.UnstructuredList
	if err := Decode(b.Bytes(), &l); err != nil {
		return nil, err
	}
	if len(l.Items) != 1 {
		return nil, fmt.Errorf("decoded %d objects from one item", len(l.Items))
	}
	return &unstructured.Unstructured{Object: l.Items[0].Object}, nil
}

func writeCBORText(b *bytes.Buffer, s string) {
	writeCBORHead(b, cborText, uint64(len(s)))
	b.WriteString(s)
}

func writeCBORHead(b *bytes.Buffer, major byte, n uint64) {
	switch {
	case n < 24:
		b.WriteByte(major<<5 | byte(n))
	case n <= math.MaxUint8:
		b.WriteByte(major<<5 | 24)
		b.WriteByte(byte(n))
	case n <= math.MaxUint16:
		b.WriteByte(major<<5 | 25)
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	case n <= math.MaxUint32:
		b.WriteByte(major<<5 | 26)
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(n)))
	default:
		b.WriteByte(major<<5 | 27)
		b.Write(binary.BigEndian.AppendUint64(nil, n))
	}
}

// cborReader reads CBOR data items from a stream, copying each one's bytes; it checks that
// they are well formed (walk.go), not what they mean.
type cborReader struct {
	r       *bufio.Reader
	w       cborWalker // on r
	scratch [9]byte    // where header's head goes: read, not kept
}

func newCBORReader(body io.Reader) *cborReader {
	r := bufio.NewReaderSize(body, 32<<10)
	return &cborReader{r: r, w: cborWalker{r: r}}
}

// skipSelfDescribed skips the self-described CBOR tag (55799) that kube-apiserver writes first.
func (c *cborReader) skipSelfDescribed() error {
	b, err := c.r.Peek(len(Magic))
	if err == nil && bytes.Equal(b, Magic) {
		_, err = c.r.Discard(len(Magic))
		return err
	}
	if errors.Is(err, io.EOF) && len(b) > 0 {
		err = nil // shorter than the tag: the header's read says what is wrong
	}
	return unexpectedEOF(err)
}

// header reads the head of a data item of the given major type and returns its count:
// entries for a map, elements for an array; -1 for an indefinite length. A null counts as an
// empty array or map, as apimachinery reads it.
func (c *cborReader) header(major byte) (int, error) {
	c.w.buf = c.scratch[:0]
	got, ai, n, err := c.w.head()
	switch {
	case err != nil:
		return 0, err
	case got == cborSimple && ai == 22: // null
		return 0, nil
	case got != major:
		return 0, fmt.Errorf("is CBOR major type %d, not %d", got, major)
	case ai == 31:
		return -1, nil
	case n > math.MaxInt32:
		return 0, fmt.Errorf("a CBOR length of %d", n)
	}
	return int(n), nil
}

// eachElement calls fn with each element of the array the reader is at, copied into *buf.
func (c *cborReader) eachElement(buf *[]byte, fn func([]byte) error) error {
	n, err := c.header(cborArray)
	if err != nil {
		return err
	}
	for i := 0; n < 0 || i < n; i++ {
		if n < 0 {
			end, err := c.atBreak()
			if err != nil {
				return err
			}
			if end {
				return nil
			}
		}
		if *buf, err = c.item((*buf)[:0], 0); err != nil {
			return err
		}
		if err := fn(*buf); err != nil {
			return err
		}
	}
	return nil
}

// atBreak reports, inside an indefinite-length array or map, whether its end comes next, and
// consumes it if so.
func (c *cborReader) atBreak() (bool, error) {
	b, err := c.r.Peek(1)
	if err != nil {
		return false, unexpectedEOF(err)
	}
	if b[0] != cborBreak {
		return false, nil
	}
	_, err = c.r.Discard(1)
	return true, err
}

// end checks that nothing follows the list.
func (c *cborReader) end() error {
	if _, err := c.r.Peek(1); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("data after the list")
		}
		return err
	}
	return nil
}

// item appends the bytes of the next whole data item to buf.
func (c *cborReader) item(buf []byte, depth int) ([]byte, error) {
	c.w.buf = buf
	err := c.w.walk(depth)
	buf, c.w.buf = c.w.buf, nil
	return buf, err
}

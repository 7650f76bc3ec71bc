package cborwire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// One walker checks that a CBOR data item is well formed (RFC 8949's rules) and finds where
// it ends, for both readers of CBOR: the LIST stream reader (list.go), which copies each
// item out of the body as it arrives, and the metadata scanner (scan.go), which
// walks an item already in memory without allocating. They accept and refuse exactly the same
// items, since it is the same code.

// CBOR's major types (RFC 8949, section 3.1).
const (
	cborUint byte = iota
	cborNegInt
	cborBytes
	cborText
	cborArray
	cborMap
	cborTag
	cborSimple
)

const cborBreak = 0xff

// cborMaxNesting bounds how deep the walker follows arrays, maps and tags, so that a hostile
// body cannot exhaust the stack; apimachinery's decoder allows 64 levels.
const cborMaxNesting = 64

// cborWalker walks data items from a stream (r set: each byte read is appended to buf) or in
// a slice (b, from offset i: nothing is copied).
type cborWalker struct {
	r   *bufio.Reader
	buf []byte
	b   []byte
	i   int
}

// next reads one byte.
func (w *cborWalker) next() (byte, error) {
	if w.r != nil {
		c, err := w.r.ReadByte()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		w.buf = append(w.buf, c)
		return c, nil
	}
	if w.i >= len(w.b) {
		return 0, io.ErrUnexpectedEOF
	}
	w.i++
	return w.b[w.i-1], nil
}

// peek is the next byte, not consumed.
func (w *cborWalker) peek() (byte, error) {
	if w.r != nil {
		b, err := w.r.Peek(1)
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		return b[0], nil
	}
	if w.i >= len(w.b) {
		return 0, io.ErrUnexpectedEOF
	}
	return w.b[w.i], nil
}

// take consumes the next n bytes: copied in chunks from a stream, so that a hostile length
// cannot make it allocate more than the body holds; skipped in a slice.
func (w *cborWalker) take(n uint64) error {
	if w.r == nil {
		if n > uint64(len(w.b)-w.i) {
			return io.ErrUnexpectedEOF
		}
		w.i += int(n)
		return nil
	}
	for n > 0 {
		chunk := int(min(n, 64<<10))
		start := len(w.buf)
		w.buf = slices.Grow(w.buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(w.r, w.buf[start:]); err != nil {
			return unexpectedEOF(err)
		}
		n -= uint64(chunk)
	}
	return nil
}

// room reports whether n more data items (a byte each at least) may follow: in a slice, that
// the bytes are there, so that a hostile count fails at once; a stream ends where it ends.
func (w *cborWalker) room(n uint64) bool { return w.r != nil || n <= uint64(len(w.b)-w.i) }

// head reads the head of a data item: its initial byte's major type and additional
// information, and the argument that follows (none for an indefinite length, ai 31).
func (w *cborWalker) head() (major, ai byte, arg uint64, err error) {
	ib, err := w.next()
	if err != nil {
		return 0, 0, 0, err
	}
	major, ai = ib>>5, ib&0x1f
	if ai < 24 || ai == 31 {
		return major, ai, uint64(ai), nil
	}
	size := argumentSize(ai)
	if size == 0 {
		return 0, 0, 0, fmt.Errorf("malformed CBOR: additional information %d", ai)
	}
	for range size {
		c, err := w.next()
		if err != nil {
			return 0, 0, 0, err
		}
		arg = arg<<8 | uint64(c)
	}
	return major, ai, arg, nil
}

// walk consumes one whole data item, nested ones included; depth is how deep it is.
func (w *cborWalker) walk(depth int) error {
	if depth > cborMaxNesting {
		return fmt.Errorf("CBOR nested deeper than %d levels", cborMaxNesting)
	}
	major, ai, n, err := w.head()
	if err != nil {
		return err
	}
	if ai == 31 {
		return w.indefinite(major, depth)
	}
	switch major {
	case cborBytes, cborText:
		return w.take(n)
	case cborArray, cborMap:
		count := n
		if major == cborMap {
			if count > math.MaxUint64/2 {
				return fmt.Errorf("a CBOR map of %d entries", n)
			}
			count *= 2
		}
		if !w.room(count) {
			return io.ErrUnexpectedEOF
		}
		for range count {
			if err := w.walk(depth + 1); err != nil {
				return err
			}
		}
	case cborTag:
		return w.walk(depth + 1)
	}
	return nil
}

// indefinite consumes the rest of an indefinite-length item whose initial byte was read.
func (w *cborWalker) indefinite(major byte, depth int) error {
	switch major {
	case cborBytes, cborText, cborArray, cborMap:
	case cborSimple:
		return errors.New("a CBOR break outside an indefinite-length item")
	default:
		return fmt.Errorf("CBOR major type %d cannot have an indefinite length", major)
	}
	for i := 0; ; i++ {
		c, err := w.peek()
		if err != nil {
			return err
		}
		if c == cborBreak {
			if major == cborMap && i%2 == 1 {
				return errors.New("CBOR map ends between a key and its value")
			}
			_, err := w.next()
			return err
		}
		if (major == cborBytes || major == cborText) && (c>>5 != major || c&0x1f == 31) {
			// Chunks of a string are definite strings of the same type.
			return errors.New("a chunk of an indefinite CBOR string is not a definite string of its type")
		}
		if err := w.walk(depth + 1); err != nil {
			return err
		}
	}
}

// argumentSize is how many bytes follow an initial byte's additional information ai: 0 for
// a value in ai itself, or for the reserved 28–30.
func argumentSize(ai byte) int {
	switch ai {
	case 24:
		return 1
	case 25:
		return 2
	case 26:
		return 4
	case 27:
		return 8
	}
	return 0
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

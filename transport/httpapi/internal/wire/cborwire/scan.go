package cborwire

import (
	"bytes"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// The CBOR metadata scan (package wire): an item's namespace, name, resourceVersion and uid read
// from its bytes without decoding or allocating, so that a relist leaves undecoded what the store
// holds unchanged. apimachinery writes strings, map keys included, as CBOR byte strings and
// reads text strings alike, so both are accepted. Only what is plainly one object is vouched
// for — a map of definite length, "metadata" once, each of its four fields at most once and a
// definite string, every data item well formed and the item's bytes read to their end;
// anything else is decoded, and so fails or not exactly as before. What the scan does not
// check is what only a decode would (a duplicate key deep in the object, a text string that
// is not UTF-8): an item at the resourceVersion of an object the store holds is that object,
// which decoded (docs/semantics.md, "Relists").

// ScanMeta reads the metadata of the CBOR object raw (optionally self-described).
func ScanMeta(raw []byte) (m wire.Meta, ok bool) {
	var seenMeta bool
	end, ok := cborMapFields(raw, skipSelfDescribedAt(raw, 0), func(key []byte, v int) (int, bool) {
		if string(key) != "metadata" {
			return cborSkip(raw, v, 0)
		}
		if seenMeta {
			return 0, false
		}
		seenMeta = true
		var seen [4]bool
		return cborMapFields(raw, v, func(key []byte, v int) (int, bool) {
			var field *[]byte
			var i int
			switch string(key) {
			case "namespace":
				field, i = &m.Namespace, 0
			case "name":
				field, i = &m.Name, 1
			case "resourceVersion":
				field, i = &m.ResourceVersion, 2
			case "uid":
				field, i = &m.UID, 3
			default:
				return cborSkip(raw, v, 1)
			}
			if seen[i] {
				return 0, false
			}
			seen[i] = true
			s, next, ok := cborStringAt(raw, v)
			*field = s
			return next, ok
		})
	})
	return m, ok && seenMeta && end == len(raw) && len(m.Name) > 0 && len(m.ResourceVersion) > 0
}

// scanCBORWatchFrame reads a CBOR watch frame — a metav1.WatchEvent, a map with "type" and
// "object" — as far as its type and its object, embedded as a CBOR data item; each must
// appear once and the frame must be read to its end.
func scanCBORWatchFrame(frame []byte) (typ, object []byte, ok bool) {
	at, objects := -1, 0
	end, ok := cborMapFields(frame, skipSelfDescribedAt(frame, 0), func(key []byte, v int) (int, bool) {
		switch string(key) {
		case "type":
			if typ != nil {
				return 0, false
			}
			s, next, ok := cborStringAt(frame, v)
			typ = s
			return next, ok && s != nil
		case "object":
			at, objects = v, objects+1
		}
		return cborSkip(frame, v, 0)
	})
	if !ok || end != len(frame) || objects != 1 || typ == nil {
		return nil, nil, false
	}
	next, _ := cborSkip(frame, at, 0)
	return typ, frame[at:next], true
}

func skipSelfDescribedAt(b []byte, i int) int {
	if bytes.HasPrefix(b[i:], Magic) {
		return i + len(Magic)
	}
	return i
}

// cborMapFields calls fn with each key of the definite-length map at b[i] and the offset of
// its value; fn returns the offset after the value. It returns the offset after the map.
func cborMapFields(b []byte, i int, fn func(key []byte, value int) (int, bool)) (int, bool) {
	major, n, i, ok := cborHeadAt(b, i)
	if !ok || major != cborMap || n > uint64(len(b)) {
		return 0, false
	}
	for range n {
		var key []byte
		if key, i, ok = cborStringAt(b, i); !ok {
			return 0, false
		}
		if i, ok = fn(key, i); !ok {
			return 0, false
		}
	}
	return i, true
}

// cborStringAt is the content of the definite-length byte or text string at b[i].
func cborStringAt(b []byte, i int) (s []byte, next int, ok bool) {
	major, n, i, ok := cborHeadAt(b, i)
	if !ok || (major != cborBytes && major != cborText) || n > uint64(len(b)-i) {
		return nil, 0, false
	}
	return b[i : i+int(n) : i+int(n)], i + int(n), true
}

// cborHeadAt reads the head of the data item at b[i]: its major type and argument, and the
// offset after the head. An indefinite length or a break is not a head this reads.
func cborHeadAt(b []byte, i int) (major byte, arg uint64, next int, ok bool) {
	if i >= len(b) {
		return 0, 0, 0, false
	}
	ib := b[i]
	major, ai := ib>>5, ib&0x1f
	i++
	if ai < 24 {
		return major, uint64(ai), i, true
	}
	size := argumentSize(ai)
	if size == 0 || len(b)-i < size {
		return 0, 0, 0, false
	}
	for _, c := range b[i : i+size] {
		arg = arg<<8 | uint64(c)
	}
	return major, arg, i + size, true
}

// cborSkip is the offset after the data item at b[i], indefinite lengths included, as the
// stream reader walks it (walk.go); depth is how deep the item is.
func cborSkip(b []byte, i, depth int) (int, bool) {
	w := cborWalker{b: b, i: i}
	if err := w.walk(depth); err != nil {
		return 0, false
	}
	return w.i, true
}

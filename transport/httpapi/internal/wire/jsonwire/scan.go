package jsonwire

import (
	"encoding/json"

	"github.com/rewatch/rewatch/transport/httpapi/internal/wire"
)

// The JSON metadata scan (package wire): an object's namespace, name and
// resourceVersion, and a watch frame's type and object, read from the bytes without decoding
// or allocating.

// ScanMeta reads the namespace, name, resourceVersion and uid of the object raw holds: the
// string members "namespace", "name", "resourceVersion" and "uid" of its top-level "metadata"
// object, keys compared case-sensitively as apimachinery's decoding compares them. ok is false
// unless metadata appears once, name and resourceVersion once each and namespace and uid at
// most once, all strings.
func ScanMeta(raw []byte) (m wire.Meta, ok bool) {
	var metadata []byte
	seen := 0
	if !jsonFields(raw, func(key []byte, escaped bool, value []byte) bool {
		if jsonKeyIs(key, escaped, "metadata") {
			metadata = value
			seen++
		}
		return true
	}) || seen != 1 {
		return wire.Meta{}, false
	}
	var names, namespaces, rvs, uids int
	if !jsonFields(metadata, func(key []byte, escaped bool, value []byte) bool {
		var into *[]byte
		switch {
		case jsonKeyIs(key, escaped, "name"):
			into, names = &m.Name, names+1
		case jsonKeyIs(key, escaped, "namespace"):
			into, namespaces = &m.Namespace, namespaces+1
		case jsonKeyIs(key, escaped, "resourceVersion"):
			into, rvs = &m.ResourceVersion, rvs+1
		case jsonKeyIs(key, escaped, "uid"):
			into, uids = &m.UID, uids+1
		default:
			return true
		}
		s, ok := jsonStringValue(value)
		*into = s
		return ok
	}) || names != 1 || namespaces > 1 || rvs != 1 || uids > 1 {
		return wire.Meta{}, false
	}
	return m, true
}

// scanJSONWatchFrame reads a JSON watch frame's "type" and the span of its "object", each of
// which must appear once.
func scanJSONWatchFrame(frame []byte) (typ, object []byte, ok bool) {
	types, objects := 0, 0
	if !jsonFields(frame, func(key []byte, escaped bool, value []byte) bool {
		switch {
		case jsonKeyIs(key, escaped, "type"):
			types++
			var ok bool
			typ, ok = jsonStringValue(value)
			return ok
		case jsonKeyIs(key, escaped, "object"):
			objects++
			object = value
		}
		return true
	}) || types != 1 || objects != 1 {
		return nil, nil, false
	}
	return typ, object, true
}

// jsonKeyIs compares a member's key, as it stands between its quotes, with want.
func jsonKeyIs(key []byte, escaped bool, want string) bool {
	if !escaped {
		return string(key) == want
	}
	s, ok := jsonUnescape(key)
	return ok && string(s) == want
}

// jsonStringValue is the content of a JSON string value; not ok for any other value (null
// included: the type decode would make it "", which the scanner does not second-guess).
func jsonStringValue(value []byte) ([]byte, bool) {
	s := jsonScanner{b: value}
	content, escaped, ok := s.str()
	if !ok || s.i != len(value) {
		return nil, false
	}
	if escaped {
		return jsonUnescape(content)
	}
	return content, true
}

// jsonUnescape decodes a string's content with escapes, as encoding/json does; rare enough
// (Kubernetes names need none) to allocate.
func jsonUnescape(content []byte) ([]byte, bool) {
	quoted := make([]byte, 0, len(content)+2)
	quoted = append(append(append(quoted, '"'), content...), '"')
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

// jsonFields calls fn with each member of the JSON object b holds — its key as it stands
// between the quotes, whether that has escapes, and the span of its value — and reports
// whether b was an object and fn accepted every member. b has passed encoding/json's syntax
// check (the Decoder that read it), but the scan never trusts it: anything unexpected ends
// it with false, never a panic.
func jsonFields(b []byte, fn func(key []byte, escaped bool, value []byte) bool) bool {
	s := jsonScanner{b: b}
	s.space()
	if !s.is('{') {
		return false
	}
	s.i++
	s.space()
	if s.is('}') {
		s.i++
		return s.end()
	}
	for {
		s.space()
		key, escaped, ok := s.str()
		if !ok {
			return false
		}
		s.space()
		if !s.is(':') {
			return false
		}
		s.i++
		s.space()
		start := s.i
		if !s.skip() {
			return false
		}
		if !fn(key, escaped, b[start:s.i]) {
			return false
		}
		s.space()
		switch {
		case s.is(','):
			s.i++
		case s.is('}'):
			s.i++
			return s.end()
		default:
			return false
		}
	}
}

type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) is(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end reports whether nothing but white space follows.
func (s *jsonScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// str reads the string at the scanner: its content between the quotes and whether it holds
// escapes.
func (s *jsonScanner) str() (content []byte, escaped, ok bool) {
	if !s.is('"') {
		return nil, false, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			return s.b[start:j], escaped, true
		}
	}
	return nil, false, false
}

// skip passes over the value at the scanner.
func (s *jsonScanner) skip() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, _, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	case ',', ':', '}', ']':
		return false
	}
	start := s.i // a number, true, false or null
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

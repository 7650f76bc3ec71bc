package fsm

import "fmt"

// enumNames gives a small enum its text: String for transcripts and logs, MarshalText and
// UnmarshalText for journals. Every enum in this package uses it, so that all of them read,
// write and fail the same way, and a journal names values instead of numbering them (numbers
// would silently change meaning when a constant is inserted).
//
// names[v] is the text of value v. The zero value's entry is its text whatever it is, "" included
// (NoCause, and the zero of an enum whose zero is no valid value, print and marshal as "" — what
// omitempty leaves out anyway). Any other value whose entry is "" or missing has no name: it
// prints as typ(v), for instance "State(9)", and refuses to marshal.
type enumNames[T ~uint8] struct {
	typ   string // the Go type, for values with no name
	kind  string // what an error calls a value: "fsm: unknown <kind> 9"
	names []string
}

func (n *enumNames[T]) named(v T) bool {
	return int(v) < len(n.names) && (v == 0 || n.names[v] != "")
}

func (n *enumNames[T]) String(v T) string {
	if n.named(v) {
		return n.names[v]
	}
	return fmt.Sprintf("%s(%d)", n.typ, uint8(v))
}

func (n *enumNames[T]) MarshalText(v T) ([]byte, error) {
	if !n.named(v) {
		return nil, fmt.Errorf("fsm: unknown %s %d", n.kind, uint8(v))
	}
	return []byte(n.names[v]), nil
}

func (n *enumNames[T]) UnmarshalText(v *T, b []byte) error {
	for i, name := range n.names {
		if name == string(b) && n.named(T(i)) {
			*v = T(i)
			return nil
		}
	}
	return fmt.Errorf("fsm: unknown %s %q", n.kind, b)
}

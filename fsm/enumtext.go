package fsm

import "fmt"

// enumText converts small enums to and from their names for journals and transcripts.
type enumText []string

func (n enumText) name(v uint8, kind string) string {
	if int(v) < len(n) && n[v] != "" {
		return n[v]
	}
	return fmt.Sprintf("%s(%d)", kind, v)
}

func (n enumText) marshal(v uint8, kind string) ([]byte, error) {
	if int(v) >= len(n) || (n[v] == "" && v != 0) {
		return nil, fmt.Errorf("fsm: unknown %s %d", kind, v)
	}
	return []byte(n[v]), nil
}

func (n enumText) unmarshal(b []byte, kind string) (uint8, error) {
	for i, s := range n {
		if s == string(b) {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("fsm: unknown %s %q", kind, b)
}

func errUnknown(kind string, v uint8) error      { return fmt.Errorf("fsm: unknown %s %d", kind, v) }
func errUnknownName(kind string, b []byte) error { return fmt.Errorf("fsm: unknown %s %q", kind, b) }

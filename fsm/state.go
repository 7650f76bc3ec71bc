package fsm

// State is where the reflector is in its LIST → WATCH cycle.
type State uint8

const (
	// Listing is the initial LIST (or watch-list stream) that fills the store for the first time.
	Listing State = iota
	// Watching covers opening a watch and consuming its stream.
	Watching
	// Backoff waits on a timer before retrying whatever failed; Snapshot.Next says what.
	Backoff
	// Relisting is a LIST after the watch could not be resumed.
	Relisting
	// Stopped is terminal: every event is ignored and no command is ever emitted again.
	Stopped
)

// States lists every state in table order.
func States() []State { return []State{Listing, Watching, Backoff, Relisting, Stopped} }

var stateNames = enumNames[State]{typ: "State", kind: "state",
	names: []string{"Listing", "Watching", "Backoff", "Relisting", "Stopped"}}

func (s State) String() string { return stateNames.String(s) }

// MarshalText writes the state by name so journals stay readable and stable across reorderings.
func (s State) MarshalText() ([]byte, error) { return stateNames.MarshalText(s) }

// UnmarshalText accepts the names MarshalText writes.
func (s *State) UnmarshalText(b []byte) error { return stateNames.UnmarshalText(s, b) }

package transitions

import (
	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
)

// Machine holds an immutable configuration; Step is its only behaviour. A Machine is safe for
// concurrent use because it has no mutable state.
type Machine struct {
	cfg Config
	// relistRules are the configuration's rules about relists (relist.go).
	relistRules []relistRule
}

// New returns a Machine for cfg, with defaults filled in.
func New(cfg Config) (*Machine, error) {
	full, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Machine{cfg: full, relistRules: relistRules(full)}, nil
}

// MustNew is New for configurations known to be valid (tests, defaults).
func MustNew(cfg Config) *Machine {
	m, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return m
}

// Config returns the configuration in force, defaults included.
func (m *Machine) Config() Config { return m.cfg }

// Initial is the snapshot before any event: Listing, nothing requested yet.
func (m *Machine) Initial() fsm.Snapshot {
	return fsm.Snapshot{State: fsm.Listing, Rand: backoff.SplitMix64(m.cfg.Seed)}
}

// Step applies event e to the snapshot *s in place and appends the commands it calls for to
// out. Its result depends on *s, *e and the configuration alone: it reads no clock, performs no
// I/O and draws randomness only from s.Rand. It works in place, raft-style, because a watch
// frame must cost a few nanoseconds: copying a snapshot and a command list by value per event
// costs more than the decision itself (see Next for the value form).
//
// The event is read as a cause (its rule's reading), whose row the table gives; a row that would begin a relist at
// once passes the relist rules first, which may hold it back (relistRow). Events that belong to
// no current request or timer, events whose cause the table does not permit in the current
// state, and every event after Stopped change nothing and append nothing.
func (m *Machine) Step(s *fsm.Snapshot, e *fsm.Event, out []fsm.Command) []fsm.Command {
	cause := m.cause(s, e)
	row, ok := Table.Lookup(s.State, cause)
	if !ok {
		return out
	}
	if cause == fsm.CauseWatchEvent {
		// The hot path, a watch frame, stepped here rather than through effectsBeforeMove:
		// its rule states nothing the step applies but its effect and the deadline (checked
		// when the package loads), and its effect is called directly — through the rule it
		// would take the event by value, a tenth of the frame's step.
		if s.List.EndTimer != 0 {
			endDeadlineOff(s, row, &out)
		}
		out = m.watchEvent(s, e, out)
		if !deadlineHolds(s, row) { // keepDeadline, its hot path inlined
			m.moveDeadline(s, e, row, &out)
		}
		s.State, s.Cause = row.To, row.Cause
		return out
	}
	if mayHoldRelist(row) { // relistRow, with its test inlined
		row = m.heldRelistRow(s, e, row)
	}
	m.effectsBeforeMove(s, e, cause, row, &out)
	s.State, s.Cause = row.To, row.Cause
	return out
}

// Next is Step in value form: the snapshot after e, and the commands e produced. It allocates
// the command slice; tests, replay and tooling read better with it.
func (m *Machine) Next(s fsm.Snapshot, e fsm.Event) (fsm.Snapshot, []fsm.Command) {
	out := m.Step(&s, &e, nil)
	return s, out
}

func emit(out *[]fsm.Command, c fsm.Command) { *out = append(*out, c) }

// Classify returns the cause e would take in s, or fsm.NoCause when Step would ignore it. It
// changes nothing; observers use it to label transitions.
func (m *Machine) Classify(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	row, ok := Table.Lookup(s.State, m.cause(s, e))
	if !ok {
		return fsm.NoCause
	}
	return m.relistRow(s, e, row).Cause
}

package transitions

import (
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// Every relist — a listing of the synced store after the watch could not be resumed — passes
// through this file: the table's rows that begin one (fsm.Transition.BeginsRelist) are taken
// through relistRow, performed by beginRelist, and its first LIST goes out in relistNow, which
// notes it in Snapshot.Relists. A rule about relists (how many, how often) is one relistRule,
// built from the configuration in relistRules; it reads the history and says how long a relist
// must wait, and the rest follows (docs/design.md, "How to add a rule about relists").

// relistRule says how long a relist about to begin at now must wait (≤ 0: it may begin now). It
// reads the snapshot, in particular s.Relists, and changes nothing.
type relistRule func(s *fsm.Snapshot, now time.Time) time.Duration

// relistRules are the rules a configuration holds relists to. None is configured by default:
// a relist begins as soon as its row says.
func relistRules(cfg Config) []relistRule {
	var rules []relistRule
	if cfg.MaxRelists > 0 {
		rules = append(rules, relistCap(cfg.MaxRelists, relistCapWindow))
	}
	return rules
}

// HoldsRelists reports whether the configuration holds relists to rules (MaxRelists, …): a
// relist's wait may then be theirs rather than its row's (docs/semantics.md, "Relists").
func (m *Machine) HoldsRelists() bool { return len(m.relistRules) > 0 }

// relistCapWindow is the window MaxRelists counts relists in.
const relistCapWindow = 10 * time.Minute

// relistCap holds a relist back while n relists have begun within the last window: it waits
// until the oldest of them is window old (docs/semantics.md, "Relists").
func relistCap(n int, window time.Duration) relistRule {
	return func(s *fsm.Snapshot, now time.Time) time.Duration {
		oldest, ok := s.Relists.Recent(n - 1)
		if !ok {
			return 0
		}
		return oldest.Add(window).Sub(now)
	}
}

// relistWait is the longest wait the relist rules ask of a relist beginning at e.Now.
func (m *Machine) relistWait(s *fsm.Snapshot, e *fsm.Event) time.Duration {
	var d time.Duration
	for _, rule := range m.relistRules {
		d = max(d, rule(s, e.Now))
	}
	return d
}

// deferredRelist is the table's row for a relist the rules hold back; checked when the package
// loads (rules.go).
func deferredRelist() fsm.Transition {
	row, _ := Table.Lookup(fsm.Watching, fsm.CauseRelistDeferred)
	return row
}

// relistRow is the row an event takes once the relist stage has had its say: a row that would
// begin a relist at once is taken by the first rule of the stage that takes it (rule.takesRelist:
// relist-deferred, when a relist rule says wait), whose row replaces it. A row that waits anyway
// keeps its cause; beginRelist lengthens its wait. Step and Classify both read it, so it
// changes nothing.
func (m *Machine) relistRow(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition) fsm.Transition {
	if mayHoldRelist(row) {
		return m.heldRelistRow(s, e, row)
	}
	return row
}

// mayHoldRelist: the row begins a relist at once, which the relist stage may take. Every event
// asks it: it inlines, and the stage is asked only then.
func mayHoldRelist(row fsm.Transition) bool {
	return row.To == fsm.Relisting && row.From == fsm.Watching
}

// heldRelistRow is relistRow's decision for a row mayHoldRelist lets through.
func (m *Machine) heldRelistRow(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition) fsm.Transition {
	for _, r := range relistStage {
		if r.takesRelist(m, s, *e, row) {
			stage, _ := Table.Lookup(fsm.Watching, r.cause)
			return stage
		}
	}
	return row
}

// beginRelist performs a row that begins a relist, after the particular effects of the cause
// that took it: the LIST goes out now, or the wait is armed after which it will — the row's
// own wait (its rule's, or the usual delay: a second 410, a second refusal) lasting at least
// what the rules ask; a deferred relist's is exactly what they ask (deferredWait).
func (m *Machine) beginRelist(s *fsm.Snapshot, e *fsm.Event, row fsm.Transition, out *[]fsm.Command) {
	switch r := ruleOf[row.Cause]; {
	case row.To == fsm.Relisting:
		m.relistNow(s, e, out)
	case r.wait != nil:
		m.backoff(s, row, m.atLeastRulesWait(s, e, r.wait(m, s, *e)), out)
	default:
		m.backoff(s, row, m.atLeastRulesWait(s, e, m.delay(s, e, row.Then)), out)
	}
}

// deferredWait is the wait of a relist the rules held back: what they ask (it is no failure
// streak, so the backoff does not advance).
func (m *Machine) deferredWait(s *fsm.Snapshot, e fsm.Event) time.Duration {
	return m.rulesWait(s, m.relistWait(s, &e))
}

// atLeastRulesWait lengthens a row's own wait d to what the relist rules ask, when they ask
// for more.
func (m *Machine) atLeastRulesWait(s *fsm.Snapshot, e *fsm.Event, d time.Duration) time.Duration {
	if w := m.relistWait(s, e); w > d {
		return m.rulesWait(s, w)
	}
	return d
}

// rulesWait is a wait the relist rules decided, not the server: whatever Retry-After the
// event carried was not what the reflector waited, so the next Retry-After is a first one
// again, waited exactly (docs/semantics.md, "a repeated Retry-After").
func (m *Machine) rulesWait(s *fsm.Snapshot, d time.Duration) time.Duration {
	s.RetryAfter.Repeats = 0
	return max(d, MinWait)
}

// relistNow sends a relist's first LIST: at once on its row, or when the wait it began after
// is over.
func (m *Machine) relistNow(s *fsm.Snapshot, e *fsm.Event, out *[]fsm.Command) {
	s.Relists.Note(e.Now)
	m.startListing(s, out)
}

package transitions

import "github.com/rewatch/rewatch/fsm"

// The rules of a wait's end and of the stop. A wait is armed by the row into Backoff that began
// it (effectsBeforeMove, wait.go); its timer takes Backoff's one row into the state the wait
// leads to (Snapshot.Wait.Next), and goes on there with what the wait interrupted.

var waitRules = []rule{
	{
		cause: fsm.CauseRetryWatch, label: "timer → WATCH from last RV",
		reads: []reading{timerFired},
		rows:  []fsm.Transition{moves(fsm.Backoff, fsm.Watching)},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			s.Wait.Timer = 0
			m.openWatch(s, &out)
			return out
		},
	},
	{
		cause: fsm.CauseRetryRelist, label: "timer → LIST at last RV",
		reads:  []reading{timerFired},
		rows:   []fsm.Transition{moves(fsm.Backoff, fsm.Relisting)},
		effect: (*Machine).listAgain,
	},
	{
		cause: fsm.CauseRetryList, label: "timer → retry initial LIST",
		reads:  []reading{timerFired},
		rows:   []fsm.Transition{moves(fsm.Backoff, fsm.Listing)},
		effect: (*Machine).listAgain,
	},
	{
		cause: fsm.CauseStop, label: "stop",
		reads: []reading{on(answersNothing, fsm.EvStop)},
		rows: []fsm.Transition{
			moves(fsm.Listing, fsm.Stopped), moves(fsm.Watching, fsm.Stopped),
			moves(fsm.Backoff, fsm.Stopped), moves(fsm.Relisting, fsm.Stopped),
		},
		effect: func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
			m.stop(s, &out)
			return out
		},
	},
}

// listAgain goes on with a listing after its wait: the continuation page that failed, with its
// token; the first LIST of a relist that waited before it began; or the listing from its start.
// s.Cause is still the wait's: the effect runs before the move.
func (m *Machine) listAgain(s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command {
	s.Wait.Timer = 0
	switch waitCause := s.Cause; {
	case s.Resume.Probing:
		// A probe that failed is asked again, not a plain listing: the snapshot still waits
		// for its answer (docs/semantics.md, "Persisted cache").
		m.probe(s, &out)
	case s.List.Continue != "":
		m.listPage(s, &out, pageContinue, s.List.Continue)
	case Table.BeginsRelist(waitCause):
		// The wait was begun by a row that begins a relist: its first LIST goes out now.
		m.relistNow(s, &e, &out)
	default:
		m.startListing(s, &out)
	}
	return out
}

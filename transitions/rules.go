package transitions

import (
	"fmt"
	"slices"
	"time"

	"github.com/rewatch/rewatch/fsm"
)

// A rule is the unit of change (docs/design.md, "A rule is the unit of change"): everything
// about one cause is declared once, in its rule — how an event is read as the cause, its rows
// of the table, the facts others read about it, and its effect. The rules are listed in
// rules_list.go (listing), rules_watch.go (the watch) and rules_wait.go (timers and the stop);
// Table and each cause's facts are derived from them when the package loads, and fsm.NewTable
// checks them.
type rule struct {
	cause fsm.Cause
	// label is what its diagram edges say.
	label string
	// reads are the ways an event is read as the cause. Of the readings of one kind of event
	// answering one kind of request, the first whose classes and condition hold is taken, in
	// the order of the rules; a reading marked otherwise is taken when none of the others
	// holds. Readings of one event kind are written to exclude each other, so that the order
	// only matters to the fallbacks.
	reads []reading
	// rows are its rows of the table (the cause is filled in): where it leads from each state
	// that admits it, and for a row into Backoff, its Then.
	rows []fsm.Transition
	// retry, avoidsList and accepted are the facts of fsm.CauseFacts.
	retry      bool
	avoidsList fsm.Avoidance
	accepted   bool
	// effect is what is particular to the cause; nil: nothing. What its facts and rows say is
	// done for every cause alike (effectsBeforeMove).
	effect effectBeforeMove
	// takesRelist makes the rule one of the relist stage's (relistRow): it says whether the rule
	// takes a relist about to begin at once (row, out of Watching into Relisting), whose row
	// its own row out of Watching then replaces; the failure's effect runs, then the rule's.
	// The first rule of the stage that takes it does. No event is read as such a rule.
	takesRelist func(m *Machine, s *fsm.Snapshot, e fsm.Event, row fsm.Transition) bool
	// wait, for a rule whose row waits, is how long; nil: the usual delay (wait.go). It runs
	// after effect; for a row that begins a relist, the relist rules may lengthen it
	// (beginRelist).
	wait func(m *Machine, s *fsm.Snapshot, e fsm.Event) time.Duration
}

// effectBeforeMove is a rule's effect: it updates s and appends commands for an event read as
// the rule's cause. It runs before the step moves s.State and s.Cause to the row's, so it sees
// them as the event found them (a timer's effect reads the cause of its wait there).
//
// It takes the event by value and returns the commands: a pointer passed through a function
// value escapes, and the driver's event and command list must stay where they are (the hot
// path allocates nothing).
type effectBeforeMove func(m *Machine, s *fsm.Snapshot, e fsm.Event, out []fsm.Command) []fsm.Command

// answers says what an event answers, and so which readings apply to it.
type answers uint8

const (
	// answersNothing: a start or a stop, which answer no request.
	answersNothing answers = iota
	// answersTimer: a timer that fired; the cause is the table's timer row into the state
	// its wait leads to (fsm.Table.Resume).
	answersTimer
	// answersDeadline: the deadline of the watch in flight fired (Snapshot.Watch.Silence).
	answersDeadline
	// answersEndDeadline: the deadline of a watch-list's initial phase fired
	// (Snapshot.List.EndTimer).
	answersEndDeadline
	// answersAsk: the caller's answer to the question in flight (fsm.CmdAsk).
	answersAsk
	// answersProbe: an event of the probe in flight, the LIST that measures a persisted
	// snapshot against the server (Snapshot.Resume.Probing; rules_resume.go).
	answersProbe
	// answersList: an event of the LIST request in flight.
	answersList
	// answersStream: an event of the watch-list stream in flight (Snapshot.List.Streaming).
	answersStream
	// answersWatch: an event of the watch in flight.
	answersWatch
	numAnswers
)

// reading is one way an event is read as a rule's cause.
type reading struct {
	on    answers
	kinds []fsm.EventKind
	// classes are the failure classes read (eventClass); zero: an event without one.
	classes fsm.Classes
	// cond is the condition on the snapshot and the event; nil: always.
	cond func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool
	// fallback: taken only when no other reading of the event holds.
	fallback bool
}

// admits reports whether the reading reads an event of class c.
func (r *reading) admits(c fsm.Class) bool {
	if r.classes == 0 {
		return c == fsm.NoClass
	}
	return r.classes.Has(c)
}

// readingOf is a reading with its cause, as cause() looks it up.
type readingOf struct {
	*reading
	cause fsm.Cause
}

// Table is the reflector's transition table, derived from the rules when the package loads:
// fsmcheck, the diagrams, the stats and the tests read it.
var Table *fsm.Table

var (
	// ruleOf indexes the rules by cause, for the step.
	ruleOf [256]*rule
	// readings indexes the readings by what the event answers and its kind, fallbacks last.
	readings [numAnswers][][]readingOf
	// relistStage are the rules that may take a relist about to begin, in order (takesRelist).
	relistStage []*rule
	// only holds, by what the event answers and its kind, the cause of the one reading when
	// there is one and it takes every such event that carries no failure: a watch frame on the
	// watch, found without a look at the event's class or a condition.
	only [numAnswers][numEventKinds]fsm.Cause
)

// numEventKinds bounds the event kinds (fsm.EventKind); build checks it.
const numEventKinds = 32

// The rules reach Table and ruleOf from their effects, so these are built in init, not in the
// variables' initialisers (which Go would refuse as a cycle).
func init() {
	t, err := build(allRules())
	if err != nil {
		panic(err)
	}
	Table = t
	if row := deferredRelist(); !row.BeginsRelist() || row.To != fsm.Backoff {
		panic("transitions: the table has no row Watching --relist-deferred--> Backoff, Then: Relisting")
	}
	// Step calls the watch event's effect directly and nothing else: its rule must state
	// nothing else for the step to do (a frame on a stream not reported open is accepted in
	// watchEvent).
	if w := ruleOf[fsm.CauseWatchEvent]; len(w.rows) != 1 || w.rows[0] != stays(fsm.Watching) || w.accepted || w.wait != nil {
		panic("transitions: the watch event's rule is the hot path's: one row, Watching to Watching, and no fact the step applies")
	}
}

func allRules() []rule {
	var all []rule
	all = append(all, listRules...)
	all = append(all, watchRules...)
	all = append(all, waitRules...)
	all = append(all, resumeRules...)
	return all
}

// build derives the table and the facts from the rules, and indexes the rules and their
// readings.
func build(rules []rule) (*fsm.Table, error) {
	var rows []fsm.Transition
	var facts []fsm.CauseFacts
	var fallbacks [numAnswers][][]readingOf
	for i := range rules {
		r := &rules[i]
		if ruleOf[r.cause] != nil {
			return nil, fmt.Errorf("transitions: two rules for %s", r.cause)
		}
		ruleOf[r.cause] = r
		if r.takesRelist != nil {
			if len(r.rows) != 1 || r.rows[0].From != fsm.Watching || len(r.reads) > 0 {
				return nil, fmt.Errorf("transitions: %s takes relists: one row out of Watching, and no reading", r.cause)
			}
			relistStage = append(relistStage, r)
		}
		var classes fsm.Classes
		timer := false
		start := len(r.reads) > 0 // it reads the start or the probe alone
		answer := false
		for j := range r.reads {
			rd := &r.reads[j]
			classes |= rd.classes
			timer = timer || rd.on == answersTimer
			start = start && (rd.on == answersProbe || rd.on == answersNothing && slices.Equal(rd.kinds, []fsm.EventKind{fsm.EvStart}))
			answer = answer || rd.on == answersAsk
			for _, k := range rd.kinds {
				into := &readings[rd.on]
				if rd.fallback {
					into = &fallbacks[rd.on]
				}
				for int(k) >= len(*into) {
					*into = append(*into, nil)
				}
				(*into)[k] = append((*into)[k], readingOf{rd, r.cause})
			}
		}
		for _, row := range r.rows {
			row.Cause = r.cause
			rows = append(rows, row)
			if (row.From == fsm.Backoff && row.To != fsm.Stopped) != timer {
				return nil, fmt.Errorf("transitions: %s: a rule is read as a timer exactly when it has a timer row out of Backoff", r.cause)
			}
		}
		facts = append(facts, fsm.CauseFacts{
			Cause: r.cause, Label: r.label, Classes: classes &^ fsm.ClassesOf(fsm.NoClass),
			Retry: r.retry, AvoidsList: r.avoidsList, Accepted: r.accepted, Start: start,
			Answer: answer, HoldsRelist: r.takesRelist != nil,
		})
	}
	for on := range fallbacks {
		for k, fs := range fallbacks[on] {
			for int(k) >= len(readings[on]) {
				readings[on] = append(readings[on], nil)
			}
			readings[on][k] = append(readings[on][k], fs...)
		}
		if len(readings[on]) > numEventKinds {
			return nil, fmt.Errorf("transitions: more than %d event kinds", numEventKinds)
		}
		for k, rs := range readings[on] {
			if len(rs) == 1 && rs[0].classes == 0 && rs[0].cond == nil && !rs[0].fallback {
				only[on][k] = rs[0].cause
			}
		}
	}
	return fsm.NewTable(rows, facts)
}

// cause reads e as a cause: what the event means for the snapshot's request or timer. Whether
// the current state admits that cause is not decided here but by the table alone (Step looks
// the row up and ignores the event when there is none), so a cause may come out that the state
// does not permit — a LIST page in Watching, a stop in Stopped — and that event is ignored.
//
// The reading depends on what is in flight, not on the state's name: a LIST, a watch-list
// stream (Streaming) or a watch. fsm.NoCause means the event answers nothing current: a stale
// request or timer, a second start.
func (m *Machine) cause(s *fsm.Snapshot, e *fsm.Event) fsm.Cause {
	if e.Kind == fsm.EvWatchEvent && e.Request == s.Request && s.Request != 0 && !s.List.Streaming && e.Failure == nil {
		// The hot path: a frame on the watch in flight, read as the switch below reads it.
		if c := only[answersWatch][fsm.EvWatchEvent]; c != fsm.NoCause {
			return c
		}
	}
	var on answers
	switch e.Kind {
	case fsm.EvStart, fsm.EvStop:
		on = answersNothing
	case fsm.EvTimerFired:
		if t := s.Watch.Silence.Timer; t != 0 && e.Timer == t {
			on = answersDeadline
			break
		}
		if t := s.List.EndTimer; t != 0 && e.Timer == t {
			on = answersEndDeadline
			break
		}
		if s.Wait.Timer == 0 || e.Timer != s.Wait.Timer {
			return fsm.NoCause
		}
		// The timer row is the one the table has into the state the wait leads to.
		c, _ := Table.Resume(s.Wait.Next)
		return c
	default:
		if s.Request == 0 || e.Request != s.Request {
			return fsm.NoCause
		}
		switch {
		case e.Kind == fsm.EvAnswer:
			on = answersAsk
		case s.List.Streaming:
			on = answersStream
		case e.Kind == fsm.EvListItem || e.Kind == fsm.EvListPage || e.Kind == fsm.EvListFailed:
			on = answersList
			if s.Resume.Probing {
				on = answersProbe
			}
		default:
			on = answersWatch
		}
	}
	if e.Kind < numEventKinds {
		// A kind read by one reading alone (a frame on the watch) is its cause, without a look
		// at the readings (only holds no cause for a kind past them).
		if c := only[on][e.Kind]; c != fsm.NoCause && e.Failure == nil {
			return c
		}
	}
	if int(e.Kind) >= len(readings[on]) {
		return fsm.NoCause
	}
	class := eventClass(e)
	var fallback fsm.Cause
	for _, r := range readings[on][e.Kind] {
		switch {
		case !r.admits(class):
		case r.fallback:
			if fallback == fsm.NoCause {
				fallback = r.cause
			}
		case r.cond == nil || r.cond(m, s, *e):
			return r.cause
		}
	}
	return fallback
}

// eventClass is what the event's failure means (classify): for a failed request or an ERROR
// frame, its class; for a stream that ended on a frame that would not decode, an internal error
// (the server sent what it should not have); for anything else, none.
func eventClass(e *fsm.Event) fsm.Class {
	switch e.Kind {
	case fsm.EvListFailed, fsm.EvWatchOpenFailed, fsm.EvWatchError:
		return classify(e.Failure)
	case fsm.EvWatchEnded:
		if e.Failure != nil && e.Failure.Transport == fsm.Decode {
			return fsm.ClassInternal
		}
	}
	return fsm.NoClass
}

// effectsBeforeMove updates s and emits the commands of the row the event takes, for the cause
// the event was read as: the row's own cause, or, for a relist the relist rules held back (the
// row's cause is then fsm.CauseRelistDeferred), the watch failure that began it, and then the
// row's rule's. Step moves s.State and s.Cause to the row's after it.
//
// What the rule's facts and row say is applied here for every cause alike: a cause the server
// accepted a request with resets the Retry-After run; a row that begins a relist goes through
// beginRelist, and any other row into Backoff arms its timer, after the rule's own effect; and
// the deadline of the watch in flight is kept (keepDeadline, silence.go).
func (m *Machine) effectsBeforeMove(s *fsm.Snapshot, e *fsm.Event, cause fsm.Cause, row fsm.Transition, out *[]fsm.Command) {
	if s.List.EndTimer != 0 && cause != fsm.CauseInitialEvent && cause != fsm.CauseInitialEventsCheck {
		endDeadlineOff(s, row, out)
	}
	r := ruleOf[cause]
	if r.accepted {
		accepted(s)
	}
	if r.effect != nil {
		*out = r.effect(m, s, *e, *out)
	}
	if row.Cause != cause {
		// The relist stage took its own row for the failure's (relistRow): the failure's
		// effect has run, and the row's rule adds its own.
		if sub := ruleOf[row.Cause]; sub.effect != nil {
			*out = sub.effect(m, s, *e, *out)
		}
	}
	switch {
	case row.BeginsRelist():
		m.beginRelist(s, e, row, out)
	case row.To == fsm.Backoff && r.wait != nil:
		m.backoff(s, row, r.wait(m, s, *e), out)
	case row.To == fsm.Backoff:
		m.backoff(s, row, m.delay(s, e, row.Then), out)
	}
	m.keepDeadline(s, e, row, out)
}

// Row shorthands for the rules' declarations.

// stays is a row in which the cause keeps the reflector in from.
func stays(from fsm.State) fsm.Transition { return fsm.Transition{From: from, To: from} }

// moves is a row from from to to.
func moves(from, to fsm.State) fsm.Transition { return fsm.Transition{From: from, To: to} }

// waits is a row from from into Backoff, going on in then when the wait is over.
func waits(from, then fsm.State) fsm.Transition {
	return fsm.Transition{From: from, To: fsm.Backoff, Then: then}
}

// timerFired is the reading of a timer rule: the timer of the wait in progress fired, and the
// wait leads to the state the rule's row out of Backoff goes to.
var timerFired = reading{on: answersTimer, kinds: []fsm.EventKind{fsm.EvTimerFired}}

// Reading shorthands.

func on(a answers, kinds ...fsm.EventKind) reading { return reading{on: a, kinds: kinds} }

func (r reading) class(cs ...fsm.Class) reading { r.classes = fsm.ClassesOf(cs...); return r }

func (r reading) anyOf(cs fsm.Classes) reading { r.classes = cs; return r }

func (r reading) when(cond func(m *Machine, s *fsm.Snapshot, e fsm.Event) bool) reading {
	r.cond = cond
	return r
}

func (r reading) otherwise() reading { r.fallback = true; return r }

// streak is a streak a rule counts (fsm.Streak): where the snapshot keeps it, and the moments
// that end it. A rule declares its streaks beside itself, and nothing else resets them.
type streak struct {
	of   func(s *fsm.Snapshot) *fsm.Streak
	ends fsm.MomentSet
}

// count is the streak's length now.
func (k streak) count(s *fsm.Snapshot) int { return k.of(s).Count(&s.Moments) }

// add counts one more.
func (k streak) add(s *fsm.Snapshot) { k.of(s).Add(&s.Moments, k.ends) }

// end ends the streak now.
func (k streak) end(s *fsm.Snapshot) { k.of(s).End() }

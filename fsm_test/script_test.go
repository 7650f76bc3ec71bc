package fsm_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// t0 is the start of every scripted run; transcripts print times as offsets from it.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scriptRunner plays events written in the words of the canonical printer, one per line (a
// transcript directive, or a line of a script in the journal tests), e.g.
//
//	+7s timer-fired
//	watch-error status=429 retry-after-seconds=5
//
// A leading +D advances the script's clock. request= and timer= default to the ones the machine
// is waiting on, so scripts only name them to send stale events.
type scriptRunner struct {
	m   *transitions.Machine
	s   fsm.Snapshot
	now time.Time
	log []step
	// deadlines holds when each armed timer is due: a script that fires one earlier is wrong
	// about the wait it shows.
	deadlines map[uint64]time.Time
}

type step struct {
	event    fsm.Event
	from, to fsm.State
	cause    fsm.Cause
	commands []fsm.Command
}

func newScriptRunner(m *transitions.Machine) *scriptRunner {
	return &scriptRunner{m: m, s: m.Initial(), now: t0, deadlines: map[uint64]time.Time{}}
}

func (r *scriptRunner) runLine(line string) (string, error) {
	e, err := r.parse(line)
	if err != nil {
		return "", err
	}
	if due, ok := r.deadlines[e.Timer]; ok && e.Kind == fsm.EvTimerFired && e.Timer == armed(r.s) && e.Now.Before(due) {
		return "", fmt.Errorf("timer %d fired at %s, before it was due at %s", e.Timer, offset(e.Now), offset(due))
	}
	from := r.s.State
	cause := r.m.Classify(&r.s, &e)
	var cmds []fsm.Command
	r.s, cmds = r.m.Next(r.s, e)
	for _, c := range cmds {
		if c.Kind == fsm.CmdArmTimer || c.Kind == fsm.CmdWatchDeadline {
			r.deadlines[c.Timer] = e.Now.Add(c.Delay)
		}
	}
	st := step{event: e, from: from, to: r.s.State, cause: cause, commands: cmds}
	r.log = append(r.log, st)
	return r.format(st), nil
}

// armed is the timer the machine has armed: Backoff's wait, or else the watch's deadline
// (docs/semantics.md, "silent watch"); the two are never armed together.
func armed(s fsm.Snapshot) uint64 {
	if s.Wait.Timer != 0 {
		return s.Wait.Timer
	}
	return s.Watch.Silence.Timer
}

func (r *scriptRunner) format(st step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", offset(st.event.Now), st.event)
	if st.cause == fsm.NoCause {
		b.WriteString("  ignored\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  %s --%s--> %s\n", st.from, st.cause, r.s)
	for _, c := range st.commands {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

func offset(t time.Time) string { return "t+" + t.Sub(t0).String() }

// parse reads a script's line: a leading +D moves the script's clock, the rest is an event in
// the words of the canonical printer (fsm.EventParser), whose request and timer default to the
// ones the machine is waiting on.
func (r *scriptRunner) parse(line string) (fsm.Event, error) {
	text := strings.TrimSpace(line)
	if step, rest, _ := strings.Cut(text, " "); strings.HasPrefix(step, "+") {
		d, err := time.ParseDuration(step[1:])
		if err != nil {
			return fsm.Event{}, fmt.Errorf("bad time step %q: %w", step, err)
		}
		r.now = r.now.Add(d)
		text = rest
	}
	kind, _, _ := strings.Cut(text, " ")
	defaults := fsm.Event{Now: r.now, Request: r.s.Request}
	switch kind {
	case fsm.EvTimerFired.String():
		defaults.Request, defaults.Timer = 0, armed(r.s)
	case fsm.EvStart.String(), fsm.EvStop.String():
		defaults.Request = 0
	}
	return fsm.EventParser{Defaults: defaults, WatchedRV: r.s.LastRV}.Parse(text)
}

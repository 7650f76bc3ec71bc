package fsm_test

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

func (r *scriptRunner) parse(line string) (fsm.Event, error) {
	fields := strings.Fields(line)
	if len(fields) > 0 && strings.HasPrefix(fields[0], "+") {
		d, err := time.ParseDuration(fields[0][1:])
		if err != nil {
			return fsm.Event{}, fmt.Errorf("bad time step %q: %w", fields[0], err)
		}
		r.now = r.now.Add(d)
		fields = fields[1:]
	}
	if len(fields) == 0 {
		return fsm.Event{}, fmt.Errorf("empty event line")
	}
	var kind fsm.EventKind
	if err := kind.UnmarshalText([]byte(fields[0])); err != nil {
		return fsm.Event{}, err
	}
	e := fsm.Event{Kind: kind, Now: r.now, Request: r.s.Request}
	if kind == fsm.EvTimerFired {
		e.Request, e.Timer = 0, armed(r.s)
	}
	if kind == fsm.EvStart || kind == fsm.EvStop {
		e.Request = 0
	}
	var f fsm.Failure
	var hasFailure bool
	var st metav1.Status
	var hasStatus bool
	for _, kv := range fields[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			switch kv {
			case "initial-events-end":
				e.InitialEventsEnd = true
				continue
			case "in-snapshot":
				e.InSnapshot = true
				continue
			}
			return e, fmt.Errorf("bad field %q", kv)
		}
		var err error
		switch k {
		case "request":
			e.Request, err = strconv.ParseUint(v, 10, 64)
		case "hook":
			err = e.Hook.UnmarshalText([]byte(v))
		case "timer":
			e.Timer, err = strconv.ParseUint(v, 10, 64)
		case "type":
			err = e.Type.UnmarshalText([]byte(v))
		case "key":
			e.Key = v
		case "rv":
			e.ResourceVersion = strings.Trim(v, `"`)
		case "continue":
			e.Continue = strings.Trim(v, `"`)
		case "refused":
			e.Refused = strings.Trim(v, `"`)
		case "items":
			e.ItemCount, err = strconv.Atoi(v)
		case "status":
			var code int
			code, err = strconv.Atoi(v)
			st.Code, hasStatus, hasFailure = int32(code), true, true
		case "reason":
			st.Reason, hasStatus, hasFailure = metav1.StatusReason(v), true, true
		case "cause":
			if st.Details == nil {
				st.Details = &metav1.StatusDetails{}
			}
			st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Type: metav1.CauseType(v)})
			hasStatus, hasFailure = true, true
		case "cache-oldest":
			// The watch cache's 410 for the RV the watch asked for (the last RV).
			st.Message = fsm.TooOldMessage(r.s.LastRV, v)
			hasStatus, hasFailure = true, true
		case "retry-after-seconds":
			var n int
			n, err = strconv.Atoi(v)
			if st.Details == nil {
				st.Details = &metav1.StatusDetails{}
			}
			st.Details.RetryAfterSeconds = int32(n)
			hasStatus, hasFailure = true, true
		case "code":
			f.Code, err = strconv.Atoi(v)
			hasFailure = true
		case "retry-after":
			f.RetryAfter, err = time.ParseDuration(v)
			f.HasRetryAfter, hasFailure = true, true
		case "transport":
			err = f.Transport.UnmarshalText([]byte(v))
			hasFailure = true
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			return e, fmt.Errorf("field %q: %w", kv, err)
		}
	}
	if hasStatus {
		if st.Reason == "" {
			st.Reason = defaultReason(st.Code)
		}
		st.Status = metav1.StatusFailure
		f.Status = &st
	}
	if hasFailure {
		e.Failure = &f
	}
	return e, nil
}

func defaultReason(code int32) metav1.StatusReason {
	switch code {
	case 429:
		return metav1.StatusReasonTooManyRequests
	case 500:
		return metav1.StatusReasonInternalError
	case 410:
		return metav1.StatusReasonExpired
	case 504:
		return metav1.StatusReasonTimeout
	case 403:
		return metav1.StatusReasonForbidden
	case 404:
		return metav1.StatusReasonNotFound
	case 401:
		return metav1.StatusReasonUnauthorized
	case 400:
		return metav1.StatusReasonBadRequest
	case 503:
		return metav1.StatusReasonServiceUnavailable
	}
	return metav1.StatusReasonUnknown
}

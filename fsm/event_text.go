package fsm

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An event's text is one line: its kind, then each field that is set, in a fixed order, as
// key=value or a bare flag (initial-events-end). Golden transcripts, the CLI and the logs print
// events so (Event.String), and transcripts and scripts are written in the same words
// (EventParser.Parse). Both directions are the one table below: each field writes itself and
// reads itself back side by side, so that a field added to Event is one line here, read as it
// is written (TestEventTextRoundTrips).

// textField is one field of an event's text.
type textField struct {
	key string
	// write is the field's values in e, in the order they print: none when it is not set, ""
	// for a flag that is.
	write func(e *Event) []string
	// read takes one value of the field ("" for a flag) into the event being read.
	read func(r *eventReading, v string) error
}

// eventFields are an event's fields, in the order they print; the failure's come last
// (failureFields). Fields with no write are read only: shorthands a script may use.
var eventFields = []textField{
	{"request", func(e *Event) []string { return uintText(e.Request) },
		func(r *eventReading, v string) (err error) { r.e.Request, err = strconv.ParseUint(v, 10, 64); return }},
	{"timer", func(e *Event) []string { return uintText(e.Timer) },
		func(r *eventReading, v string) (err error) { r.e.Timer, err = strconv.ParseUint(v, 10, 64); return }},
	{"hook", func(e *Event) []string { return textOf(e.Hook != NoHook, e.Hook.String()) },
		func(r *eventReading, v string) error { return r.e.Hook.UnmarshalText([]byte(v)) }},
	// An answer is read through its hook once the line is read (finish): the hook says its type.
	{"answer", answerText,
		func(r *eventReading, v string) (err error) {
			r.answer, err = unquoteWord(v)
			r.hasAnswer = true
			return
		}},
	{"type", func(e *Event) []string { return textOf(e.Type != 0, e.Type.String()) },
		func(r *eventReading, v string) error { return r.e.Type.UnmarshalText([]byte(v)) }},
	{"key", func(e *Event) []string { return textOf(e.Key != "", e.Key) },
		func(r *eventReading, v string) error { r.e.Key = v; return nil }},
	{"rv", func(e *Event) []string { return quoted(e.ResourceVersion) },
		func(r *eventReading, v string) (err error) { r.e.ResourceVersion, err = unquoteWord(v); return }},
	{"continue", func(e *Event) []string { return quoted(e.Continue) },
		func(r *eventReading, v string) (err error) { r.e.Continue, err = unquoteWord(v); return }},
	{"initial-events-end", func(e *Event) []string { return flag(e.InitialEventsEnd) },
		func(r *eventReading, _ string) error { r.e.InitialEventsEnd = true; return nil }},
	{"items", func(e *Event) []string {
		n := max(e.ItemCount, len(e.Items))
		return textOf(n > 0, strconv.Itoa(n))
	}, func(r *eventReading, v string) (err error) { r.e.ItemCount, err = strconv.Atoi(v); return }},
	{"in-snapshot", func(e *Event) []string { return flag(e.InSnapshot) },
		func(r *eventReading, _ string) error { r.e.InSnapshot = true; return nil }},
	{"refused", func(e *Event) []string { return quoted(e.Refused) },
		func(r *eventReading, v string) (err error) { r.e.Refused, err = unquoteWord(v); return }},
}

// failureFields are a failure's fields, in the order they print (Failure.String).
var failureFields = []textField{
	// status=CODE/REASON; a script may leave the reason out (status=429): the one
	// kube-apiserver gives that code (defaultReason), or the reason= shorthand's.
	{"status", func(e *Event) []string {
		st := statusOf(e)
		return textIf(st != nil, func() string { return strconv.Itoa(int(st.Code)) + "/" + string(st.Reason) })
	}, func(r *eventReading, v string) error {
		code, reason, hasReason := strings.Cut(v, "/")
		n, err := strconv.Atoi(code)
		st := r.status()
		st.Code = int32(n)
		if hasReason {
			st.Reason = metav1.StatusReason(reason)
		}
		return err
	}},
	{"reason", nil, func(r *eventReading, v string) error { r.status().Reason = metav1.StatusReason(v); return nil }},
	{"cause", func(e *Event) []string {
		st := statusOf(e)
		if st == nil || st.Details == nil {
			return nil
		}
		var out []string
		for _, c := range st.Details.Causes {
			out = append(out, string(c.Type))
		}
		return out
	}, func(r *eventReading, v string) error {
		d := r.details()
		d.Causes = append(d.Causes, metav1.StatusCause{Type: metav1.CauseType(v)})
		return nil
	}},
	{"retryAfterSeconds", func(e *Event) []string {
		st := statusOf(e)
		return textIf(st != nil && st.Details != nil && st.Details.RetryAfterSeconds != 0, func() string {
			return strconv.Itoa(int(st.Details.RetryAfterSeconds))
		})
	}, readRetryAfterSeconds},
	{"retry-after-seconds", nil, readRetryAfterSeconds},
	// cache-oldest=N is a watch cache's 410 for the resourceVersion the watch asked for
	// (Failure.WatchCacheTooOld): the reader knows which (EventParser.WatchedRV).
	{"cache-oldest", func(e *Event) []string {
		if statusOf(e) == nil {
			return nil
		}
		_, oldest, ok := e.Failure.WatchCacheTooOld()
		return textOf(ok, strconv.FormatUint(oldest, 10))
	}, func(r *eventReading, v string) error {
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return err
		}
		r.status().Message = TooOldMessage(r.p.WatchedRV, v)
		return nil
	}},
	{"code", func(e *Event) []string { return textOf(e.Failure.Code != 0, strconv.Itoa(e.Failure.Code)) },
		func(r *eventReading, v string) (err error) { r.failure().Code, err = strconv.Atoi(v); return }},
	{"retry-after", func(e *Event) []string { return textOf(e.Failure.HasRetryAfter, e.Failure.RetryAfter.String()) },
		func(r *eventReading, v string) (err error) {
			f := r.failure()
			f.RetryAfter, err = time.ParseDuration(v)
			f.HasRetryAfter = true
			return
		}},
	{"transport", func(e *Event) []string {
		return textOf(e.Failure.Transport != NoTransportError, e.Failure.Transport.String())
	}, func(r *eventReading, v string) error { return r.failure().Transport.UnmarshalText([]byte(v)) }},
}

// errorField is a failure that says nothing but its message — a caller's hook that failed —
// printed after the event's fields, where a failure's fields would be.
var errorField = textField{"error", func(e *Event) []string { return []string{strconv.Quote(e.Failure.Message)} },
	func(r *eventReading, v string) (err error) { r.failure().Message, err = unquoteWord(v); return }}

// String prints an event with the fields that matter for its kind, as transcripts show it.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	writeFields(&b, &e, eventFields)
	if e.Failure != nil {
		if f := e.Failure.String(); f != "" {
			b.WriteByte(' ')
			b.WriteString(f)
		} else {
			writeFields(&b, &e, []textField{errorField})
		}
	}
	return b.String()
}

// String prints what the failure says, compactly: code, reason, Retry-After, transport. Its
// message is for logs, and printed only where it is all a failure says (Event.String).
func (f *Failure) String() string {
	var b strings.Builder
	writeFields(&b, &Event{Failure: f}, failureFields)
	return strings.TrimPrefix(b.String(), " ")
}

func writeFields(b *strings.Builder, e *Event, fields []textField) {
	for _, f := range fields {
		if f.write == nil {
			continue
		}
		for _, v := range f.write(e) {
			b.WriteByte(' ')
			b.WriteString(f.key)
			if v != "" {
				b.WriteByte('=')
				b.WriteString(v)
			}
		}
	}
}

// EventParser reads events in the words Event.String writes them.
type EventParser struct {
	// Defaults are the fields an event has unless its text sets them: when it came (Now),
	// and the request or timer in flight, which a script names only for a stale event.
	Defaults Event
	// WatchedRV is the resourceVersion the watch in flight asked for, which a watch cache's
	// 410 names (cache-oldest=N prints its oldest resourceVersion alone).
	WatchedRV string
}

// Parse reads one event: its kind, then its fields in any order.
func (p EventParser) Parse(text string) (Event, error) {
	words := splitWords(text)
	if len(words) == 0 {
		return Event{}, fmt.Errorf("fsm: an empty event")
	}
	r := eventReading{p: &p, e: p.Defaults}
	if err := r.e.Kind.UnmarshalText([]byte(words[0])); err != nil {
		return Event{}, err
	}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		f, ok := fieldsByKey[k]
		if !ok {
			return Event{}, fmt.Errorf("fsm: event %s: unknown field %q", r.e.Kind, w)
		}
		if err := f.read(&r, v); err != nil {
			return Event{}, fmt.Errorf("fsm: event %s: field %q: %w", r.e.Kind, w, err)
		}
	}
	if err := r.finish(); err != nil {
		return Event{}, fmt.Errorf("fsm: event %s: %w", r.e.Kind, err)
	}
	return r.e, nil
}

var fieldsByKey = func() map[string]textField {
	m := map[string]textField{}
	for _, fs := range [][]textField{eventFields, failureFields, {errorField}} {
		for _, f := range fs {
			if _, dup := m[f.key]; dup {
				panic("fsm: two event text fields named " + f.key)
			}
			m[f.key] = f
		}
	}
	return m
}()

// eventReading is an event being read.
type eventReading struct {
	p         *EventParser
	e         Event
	f         *Failure
	answer    string
	hasAnswer bool
}

func (r *eventReading) failure() *Failure {
	if r.f == nil {
		r.f = &Failure{}
	}
	return r.f
}

func (r *eventReading) status() *metav1.Status {
	f := r.failure()
	if f.Status == nil {
		f.Status = &metav1.Status{Status: metav1.StatusFailure}
	}
	return f.Status
}

func (r *eventReading) details() *metav1.StatusDetails {
	st := r.status()
	if st.Details == nil {
		st.Details = &metav1.StatusDetails{}
	}
	return st.Details
}

// finish fills in what the fields imply: a status's reason, the answer through its hook.
func (r *eventReading) finish() error {
	if r.f != nil {
		if st := r.f.Status; st != nil && st.Reason == "" {
			st.Reason = defaultReason(st.Code)
		}
		r.e.Failure = r.f
	}
	if r.hasAnswer {
		a, err := r.e.Hook.ParseAnswer(r.answer)
		if err != nil {
			return err
		}
		r.e.Answer = a
	}
	return nil
}

func readRetryAfterSeconds(r *eventReading, v string) error {
	n, err := strconv.Atoi(v)
	r.details().RetryAfterSeconds = int32(n)
	return err
}

// defaultReason is the reason kube-apiserver's Status gives a code, for a script's status=CODE.
func defaultReason(code int32) metav1.StatusReason {
	switch code {
	case 400:
		return metav1.StatusReasonBadRequest
	case 401:
		return metav1.StatusReasonUnauthorized
	case 403:
		return metav1.StatusReasonForbidden
	case 404:
		return metav1.StatusReasonNotFound
	case 410:
		return metav1.StatusReasonExpired
	case 429:
		return metav1.StatusReasonTooManyRequests
	case 500:
		return metav1.StatusReasonInternalError
	case 503:
		return metav1.StatusReasonServiceUnavailable
	case 504:
		return metav1.StatusReasonTimeout
	}
	return metav1.StatusReasonUnknown
}

func statusOf(e *Event) *metav1.Status { return e.Failure.Status }

func answerText(e *Event) []string {
	if e.Answer == nil {
		return nil
	}
	b, err := e.Answer.MarshalText()
	if err != nil {
		return []string{strconv.Quote("!" + err.Error())}
	}
	return []string{word(string(b))}
}

// The values' forms.

func uintText(n uint64) []string { return textOf(n != 0, strconv.FormatUint(n, 10)) }

func quoted(s string) []string { return textOf(s != "", strconv.Quote(s)) }

func flag(set bool) []string { return textOf(set, "") }

// textOf is v when set.
func textOf(set bool, v string) []string {
	if !set {
		return nil
	}
	return []string{v}
}

// textIf is v() when set, for a value that is read only then.
func textIf(set bool, v func() string) []string {
	if !set {
		return nil
	}
	return []string{v()}
}

// word is s as one word of a line: itself, or quoted when it holds a space, a quote or
// nothing.
func word(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"") {
		return strconv.Quote(s)
	}
	return s
}

// unquoteWord reads a value written quoted (rv="100") or bare (rv=100).
func unquoteWord(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	return v, nil
}

// splitWords splits a line at its spaces, keeping a quoted value ("a b", with Go's escapes)
// in one word.
func splitWords(line string) []string {
	var words []string
	var w strings.Builder
	inQuote, escaped := false, false
	for _, c := range line {
		switch {
		case escaped:
			escaped = false
		case inQuote && c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case !inQuote && (c == ' ' || c == '\t'):
			if w.Len() > 0 {
				words = append(words, w.String())
				w.Reset()
			}
			continue
		}
		w.WriteRune(c)
	}
	if w.Len() > 0 {
		words = append(words, w.String())
	}
	return words
}

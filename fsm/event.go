package fsm

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
)

// EventKind says what happened. Every input of the machine is one of these.
type EventKind uint8

const (
	_ EventKind = iota
	// EvStart begins the reflector: the first LIST, or, when it carries a persisted snapshot
	// (ResourceVersion, ItemCount), the probe that says whether the snapshot can be resumed
	// (docs/semantics.md, "Persisted cache"). Refused says why a snapshot there was could not
	// be loaded; the start is then a plain one.
	EvStart
	// EvListPage is one page of a LIST response.
	EvListPage
	// EvListFailed is a LIST request that got no usable page (an HTTP error, a Status, a transport error).
	EvListFailed
	// EvWatchOpened is a WATCH request whose response headers said 200.
	EvWatchOpened
	// EvWatchEvent is an ADDED, MODIFIED, DELETED or BOOKMARK frame.
	EvWatchEvent
	// EvWatchError is an ERROR frame; its Failure carries the Status.
	EvWatchError
	// EvWatchOpenFailed is a WATCH request that failed before a stream was open.
	EvWatchOpenFailed
	// EvWatchEnded is an open stream that ended: clean EOF, server timeout, reset, or a frame that
	// would not decode (Failure says which).
	EvWatchEnded
	// EvTimerFired is an armed timer that expired.
	EvTimerFired
	// EvStop asks the reflector to stop.
	EvStop
	// EvListItem is one item of a LIST page, handed over as soon as it is decoded; the page's
	// EvListPage follows the last one, with the page's resourceVersion, continue token and
	// item count (docs/semantics.md, "Relists").
	EvListItem
	// EvAnswer is the caller's answer to a CmdAsk (Request and Hook say which): Answer, the
	// value of a hook that answers with one, or Failure, the error the caller's hook returned.
	EvAnswer
)

var eventKindNames = enumNames[EventKind]{typ: "EventKind", kind: "event kind",
	names: []string{"", "start", "list-page", "list-failed", "watch-opened", "watch-event",
		"watch-error", "watch-open-failed", "watch-ended", "timer-fired", "stop", "list-item", "answer"}}

func (k EventKind) String() string                { return eventKindNames.String(k) }
func (k EventKind) MarshalText() ([]byte, error)  { return eventKindNames.MarshalText(k) }
func (k *EventKind) UnmarshalText(b []byte) error { return eventKindNames.UnmarshalText(k, b) }

// WatchEventType is the type of a watch frame that carries an object.
type WatchEventType uint8

const (
	_ WatchEventType = iota
	Added
	Modified
	Deleted
	Bookmark
)

var watchEventTypeNames = enumNames[WatchEventType]{typ: "WatchEventType", kind: "watch event type",
	names: []string{"", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"}}

func (t WatchEventType) String() string               { return watchEventTypeNames.String(t) }
func (t WatchEventType) MarshalText() ([]byte, error) { return watchEventTypeNames.MarshalText(t) }
func (t *WatchEventType) UnmarshalText(b []byte) error {
	return watchEventTypeNames.UnmarshalText(t, b)
}

// Event is one input of the machine. It is a tagged union: Kind says which fields matter.
// It is a plain value so that the hot path (a watch frame) costs no allocation, and so that a
// journal of events serialises as one flat JSON object per line.
//
// Object and Items are the decoded objects; the machine never looks inside them, it only hands
// them to the store through commands. They are not journaled unless full capture is asked for.
type Event struct {
	Kind EventKind `json:"kind"`
	// Now is when the driver observed the event; it is the machine's only source of time.
	Now time.Time `json:"now"`
	// Request identifies the LIST or WATCH request the event belongs to (the id of the command
	// that started it). Events of any other request are stale and ignored.
	Request uint64 `json:"request,omitempty"`
	// Timer identifies the timer of an EvTimerFired.
	Timer uint64 `json:"timer,omitempty"`
	// Hook is the question an EvAnswer answers, and Answer what the caller answered: a value of
	// the type the hook declares (nil for a hook that answers nothing but whether it worked,
	// and when it failed). The journal holds its text, which the hook reads back.
	Hook   Hook   `json:"hook,omitempty"`
	Answer Answer `json:"answer,omitempty"`

	// Type, ResourceVersion and Key describe a watch frame; Key and ResourceVersion also a list
	// item, and ResourceVersion a list page, or, on EvStart, the persisted snapshot's.
	Type            WatchEventType `json:"type,omitempty"`
	ResourceVersion string         `json:"rv,omitempty"`
	Key             string         `json:"key,omitempty"`
	// InitialEventsEnd marks the BOOKMARK annotated k8s.io/initial-events-end: "true".
	InitialEventsEnd bool `json:"initialEventsEnd,omitempty"`
	// Continue is a list page's continue token.
	Continue string `json:"continue,omitempty"`
	// ItemCount is how many items the page had — len(Items), or the EvListItems that came before
	// it — kept so that journals without objects still say how big a page was; on EvStart, how
	// many objects the persisted snapshot holds.
	ItemCount int `json:"items,omitempty"`
	// Refused, on EvStart, is why a persisted snapshot was not loaded (corrupt, another
	// identity, …); the driver logs it, the journal keeps it, and the start is a plain one.
	Refused string `json:"refused,omitempty"`
	// InSnapshot, on an EvListItem of a request asked AgainstSnapshot, says that the persisted
	// snapshot the driver holds has the item: the same key, resourceVersion and uid. It is how
	// the machine tells the server's history from another one (docs/semantics.md, "Persisted
	// cache"); the driver finds it out, the machine decides what it means.
	InSnapshot bool `json:"inSnapshot,omitempty"`

	Object any   `json:"-"`
	Items  []any `json:"-"`

	// Failure describes what went wrong for EvListFailed, EvWatchError, EvWatchOpenFailed and,
	// when the stream did not end cleanly, EvWatchEnded.
	Failure *Failure `json:"failure,omitempty"`
}

// UnmarshalJSON reads an event as the journal writes it, strictly (an unknown field is an
// error, docs/journal.md), and its answer through its hook.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event // the fields, without this method
	var v struct {
		*plain
		Answer *string `json:"answer,omitempty"` // read through the hook, below
	}
	v.plain = (*plain)(e)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("fsm: trailing data after an event")
	}
	e.Answer = nil
	if v.Answer != nil {
		a, err := e.Hook.ParseAnswer(*v.Answer)
		if err != nil {
			return err
		}
		e.Answer = a
	}
	return nil
}

package fsm

import "time"

// CommandKind says what the driver must do.
type CommandKind uint8

const (
	_ CommandKind = iota
	// CmdListPage: GET one LIST page (or, with Limit 0, the whole list).
	CmdListPage
	// CmdOpenWatch: GET a watch stream.
	CmdOpenWatch
	// CmdCancelRequest: abort the request Request (close its body).
	CmdCancelRequest
	// CmdArmTimer: arm timer Timer to fire after Delay.
	CmdArmTimer
	// CmdCancelTimer: disarm timer Timer.
	CmdCancelTimer
	// CmdStage: take Object or Items (a LIST item, a LIST page, or one initial event of a
	// watch-list stream) into the full state being received: the driver puts them into an
	// incremental store at once, or holds them for one atomic Replace (docs/semantics.md,
	// "Relists"). A stage without objects (an old journal's page) counts ItemCount only. A
	// stage of Type DELETED (a watch-list's initial event) takes the object of Key out of the
	// state instead (docs/semantics.md, "Streaming list").
	CmdStage
	// CmdReplaceStore: store.Replace(everything staged, ResourceVersion).
	CmdReplaceStore
	// CmdDiscardStaged: drop what was staged; the listing it belonged to failed. With ItemCount
	// set, only the last ItemCount objects staged: the part of a page that broke off, which
	// the page's retry brings again.
	CmdDiscardStaged
	// CmdApply: store.Add, Update or Delete of Object, by Type.
	CmdApply
	// CmdStopped: the reflector has stopped; the driver returns.
	CmdStopped
	// CmdWatchDeadline: arm timer Timer to fire after Delay, while the watch Request is open:
	// the machine then looks whether the stream has been silent for longer than its bound
	// (docs/semantics.md, "silent watch"). It is not a wait: the driver arms it as any timer
	// (Backoff's timer and a deadline are never armed together), and stats do not count it as
	// backing off.
	CmdWatchDeadline
	// CmdAsk: ask the caller the question Hook names, as request Request; the driver calls the
	// caller's hook and feeds its answer back as an EvAnswer. A CmdCancelRequest for it cancels
	// the hook's context.
	CmdAsk
	// CmdRestore: put the persisted snapshot the driver loaded before the start (ItemCount
	// objects) into the store, as one full state at ResourceVersion — Replace, or an
	// incremental store's replacement — and let go of it (docs/semantics.md, "Persisted
	// cache").
	CmdRestore
	// CmdDropSnapshot: let go of the persisted snapshot loaded before the start, unrestored:
	// it cannot be resumed (ahead of the server, of another history, not comparable), or the
	// probe's page held the whole collection.
	CmdDropSnapshot
)

var commandKindNames = enumNames[CommandKind]{typ: "CommandKind", kind: "command kind",
	names: []string{"", "list", "watch", "cancel-request", "arm-timer", "cancel-timer",
		"stage", "replace-store", "discard-staged", "apply", "stopped", "watch-deadline", "ask",
		"restore", "drop-snapshot"}}

func (k CommandKind) String() string                { return commandKindNames.String(k) }
func (k CommandKind) MarshalText() ([]byte, error)  { return commandKindNames.MarshalText(k) }
func (k *CommandKind) UnmarshalText(b []byte) error { return commandKindNames.UnmarshalText(k, b) }

// Command is one output of the machine, a tagged union like Event. Every field the driver needs
// to perform the request is here, so the driver needs no state of its own to build it.
type Command struct {
	Kind CommandKind `json:"kind"`
	// Request is the id of the request started or cancelled; events of that request carry it back.
	Request uint64 `json:"request,omitempty"`

	// ResourceVersion: the LIST/WATCH resourceVersion parameter, or the RV of a Replace/Apply.
	// "" is meaningful for LIST (a consistent read) so RVSet says whether to send it at all.
	ResourceVersion string `json:"rv,omitempty"`
	RVSet           bool   `json:"rvSet,omitempty"`
	// Match is the resourceVersionMatch parameter ("" = not sent).
	Match string `json:"match,omitempty"`
	// Limit and Continue paginate a LIST.
	Limit    int64  `json:"limit,omitempty"`
	Continue string `json:"continue,omitempty"`
	// TimeoutSeconds, Bookmarks and SendInitialEvents shape a WATCH.
	TimeoutSeconds    int64 `json:"timeoutSeconds,omitempty"`
	Bookmarks         bool  `json:"bookmarks,omitempty"`
	SendInitialEvents bool  `json:"sendInitialEvents,omitempty"`
	// FreshConnection: open the watch on a new connection, not on one the transport keeps
	// idle, so that behind a load balancer it can reach another kube-apiserver
	// (docs/semantics.md, "behind a load balancer").
	FreshConnection bool `json:"freshConnection,omitempty"`
	// SilenceBound: a watch that delivers nothing — no event, no bookmark — for this long is
	// ended by the transport and reported as a Timeout (0: never; docs/semantics.md, "silent
	// watch").
	SilenceBound time.Duration `json:"silenceBound,omitempty"`
	// AgainstSnapshot, on a CmdListPage, compares the items of the request with the persisted
	// snapshot the driver holds (docs/semantics.md, "Persisted cache"): each EvListItem says
	// whether the snapshot has it (Event.InSnapshot), and an item it has may come without its
	// object, as "key K unchanged" does for the store's items.
	AgainstSnapshot bool `json:"againstSnapshot,omitempty"`
	// Hold, on a CmdStage, holds the object aside until the CmdReplaceStore or CmdDiscardStaged
	// that follows, even for an incremental store: a probe's items are a full state only if its
	// page turns out to hold the whole collection. A kept key names the persisted snapshot's
	// object.
	Hold bool `json:"hold,omitempty"`

	// Hook is the question a CmdAsk asks.
	Hook Hook `json:"hook,omitempty"`

	// Timer, Delay and Reason describe a timer (a wait, or a watch's deadline); Reason is the
	// cause that armed a wait.
	Timer  uint64        `json:"timer,omitempty"`
	Delay  time.Duration `json:"delay,omitempty"`
	Reason Cause         `json:"reason,omitempty"`

	// Type, Key and Object describe a store change; Items a staged page.
	Type      WatchEventType `json:"type,omitempty"`
	Key       string         `json:"key,omitempty"`
	ItemCount int            `json:"items,omitempty"`
	Object    any            `json:"-"`
	Items     []any          `json:"-"`
}

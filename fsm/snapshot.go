package fsm

import (
	"time"

	"github.com/rewatch/rewatch/backoff"
)

// Snapshot is everything the machine remembers: the fold of every event so far. It is a plain
// value; transitions.Step takes one and returns the next, so any snapshot can be kept, compared,
// or replayed from.
type Snapshot struct {
	State State `json:"state"`
	// Cause is the cause of the transition that produced this snapshot.
	Cause Cause `json:"cause,omitempty"`
	// Next is, in Backoff, the state the armed timer leads to.
	Next State `json:"next,omitempty"`

	// LastRV is the last resourceVersion observed: of the last completed list, or of the last
	// ADDED/MODIFIED/DELETED/BOOKMARK event. Re-watches resume from it.
	LastRV string `json:"lastRV,omitempty"`
	// RVUnusable is set when the server said LastRV is expired or too large for a LIST: the next
	// LIST asks for "" (a consistent read) instead.
	RVUnusable bool `json:"rvUnusable,omitempty"`
	// Synced is true once a full initial state has been handed to the store.
	Synced bool `json:"synced,omitempty"`

	// Request is the id of the request in flight (0: none); Seq hands out request and timer ids.
	Request uint64 `json:"request,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	// Timer is the id of the armed timer (0: none).
	Timer uint64 `json:"timer,omitempty"`

	// ListRV is the resourceVersion the current LIST was asked at, for the full-list fallback.
	ListRV string `json:"listRV,omitempty"`
	// ListContinuing: the request in flight is a continue page.
	ListContinuing bool `json:"listContinuing,omitempty"`
	// ListContinue is the continue token of the page in flight, kept through a backoff so that a
	// failed continuation page is retried where it failed (the token stays valid until the
	// server compacts, minutes later) instead of listing from page 1 again.
	ListContinue string `json:"listContinue,omitempty"`
	// ServerPages: a LIST answer has carried a continue token, so the server pages this
	// resource (its watch cache is off, or does not serve it): relists at a known RV page too.
	// Until then a relist at a known RV asks for everything in one response, which the watch
	// cache serves (docs/semantics.md, "Requests").
	ServerPages bool `json:"serverPages,omitempty"`
	// ListFull: the request in flight is the one unpaginated fallback LIST.
	ListFull bool `json:"listFull,omitempty"`
	// Streaming: the current listing is a watch-list stream (sendInitialEvents).
	Streaming bool `json:"streaming,omitempty"`
	// WatchListUnsupported: the server refused watch-list once; LIST from then on.
	WatchListUnsupported bool `json:"watchListUnsupported,omitempty"`
	// Staged counts pages or initial events staged for the pending Replace.
	Staged int `json:"staged,omitempty"`

	// WatchOpen, WatchOpenedAt and WatchEvents describe the current watch stream.
	WatchOpen     bool      `json:"watchOpen,omitempty"`
	WatchOpenedAt time.Time `json:"watchOpenedAt,omitzero"`
	WatchEvents   int       `json:"watchEvents,omitempty"`
	// RVAdvancedAt is when LastRV last moved (a watch event) or a LIST last completed: the age
	// of the resume RV, which bounds how long a re-watch may wait before the RV is likely to
	// have left the server's watch cache (docs/semantics.md, "resume-RV age guard").
	RVAdvancedAt time.Time `json:"rvAdvancedAt,omitzero"`

	// Attempt is how many backoff waits have happened since the last progress. An honoured
	// Retry-After does not count.
	Attempt int `json:"attempt,omitempty"`
	// InternalStreakStart is when the current streak of InternalErrors began (zero: none), and
	// InternalRewatches how many watches it has re-opened since. Only progress or a completed
	// LIST ends a streak.
	InternalStreakStart time.Time `json:"internalStreakStart,omitzero"`
	InternalRewatches   int       `json:"internalRewatches,omitempty"`
	// RetryAfterRepeats counts the honoured Retry-After waits since the server last accepted a
	// request (answered a LIST page, opened a watch): from the second on, a Retry-After is
	// spread (docs/semantics.md, "a repeated Retry-After").
	RetryAfterRepeats int `json:"retryAfterRepeats,omitempty"`
	// QuickEnds counts consecutive watches that ended quickly without delivering anything.
	QuickEnds int `json:"quickEnds,omitempty"`
	// ExpiredStreak counts 410s since the last watch event.
	ExpiredStreak int `json:"expiredStreak,omitempty"`

	// Rand is the seeded source of jitter; it lives here so that Step stays pure and replayable.
	Rand backoff.SplitMix64 `json:"rand"`
}

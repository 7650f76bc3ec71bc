package fsm

import (
	"time"

	"github.com/rewatch/rewatch/backoff"
)

// Snapshot is everything the machine remembers: the fold of every event so far. It is a plain
// value; transitions.Step takes one and returns the next, so any snapshot can be kept, compared,
// or replayed from.
//
// The top level holds what every concern shares: the state, the resume point, whether the store
// has synced, the request in flight and the moments that end streaks. The rest is grouped by the concern that owns it, and
// each rule of transitions reads and writes its own group: List (the listing in progress),
// Server (what the server has shown about itself), Watch (the stream and the streaks of ended
// watches), Wait (the backoff), InternalErrors and RetryAfter (their streaks), Relists (when the
// last relists began, for the rules about relists), Asked (when the caller was last asked),
// Resume (a start from a persisted snapshot). A new rule adds
// its fields to its concern's group, or a group of its own (docs/design.md, "How to add a
// Snapshot field").
type Snapshot struct {
	State State `json:"state"`
	// Cause is the cause of the transition that produced this snapshot.
	Cause Cause `json:"cause,omitempty"`

	// LastRV is the last resourceVersion observed: of the last completed list, or of the last
	// ADDED/MODIFIED/DELETED/BOOKMARK event. Re-watches resume from it.
	LastRV string `json:"lastRV,omitempty"`
	// RVUnusable is set when the server said LastRV is expired or too large for a LIST: the next
	// LIST asks for "" (a consistent read) instead.
	RVUnusable bool `json:"rvUnusable,omitempty"`
	// RVAdvancedAt is when LastRV last moved (a watch event) or a LIST last completed: the age
	// of the resume RV, which bounds how long a re-watch may wait before the RV is likely to
	// have left the server's watch cache (docs/semantics.md, "resume-RV age guard").
	RVAdvancedAt time.Time `json:"rvAdvancedAt,omitzero"`
	// Synced is true once a full initial state has been handed to the store.
	Synced bool `json:"synced,omitempty"`

	// Request is the id of the request in flight (0: none); Seq hands out request and timer ids.
	Request uint64 `json:"request,omitempty"`
	Seq     uint64 `json:"seq,omitempty"`
	// Moments counts the moments of the watch's life that end the rules' streaks (Streak).
	Moments Moments `json:"moments,omitzero"`

	List           ListState      `json:"list,omitzero"`
	Server         ServerFacts    `json:"server,omitzero"`
	Watch          WatchState     `json:"watch,omitzero"`
	Wait           WaitState      `json:"wait,omitzero"`
	InternalErrors InternalStreak `json:"internalErrors,omitzero"`
	RetryAfter     RetryAfterRun  `json:"retryAfter,omitzero"`
	Relists        RelistHistory  `json:"relists,omitzero"`
	Asked          AskHistory     `json:"asked,omitzero"`
	Resume         ResumeState    `json:"resume,omitzero"`

	// Rand is the seeded source of jitter; it lives here so that Step stays pure and replayable.
	Rand backoff.SplitMix64 `json:"rand"`
}

// ListState is the listing in progress (a LIST, page by page, or a watch-list stream), and
// what it has staged for the store.
type ListState struct {
	// RV is the resourceVersion the current listing was asked at, for the full-list fallback.
	RV string `json:"rv,omitempty"`
	// Continuing: the request in flight is a continue page.
	Continuing bool `json:"continuing,omitempty"`
	// Continue is the continue token of the page in flight, kept through a backoff so that a
	// failed continuation page is retried where it failed (the token stays valid until the
	// server compacts, minutes later) instead of listing from page 1 again.
	Continue string `json:"continue,omitempty"`
	// Full: the request in flight is the one unpaginated fallback LIST.
	Full bool `json:"full,omitempty"`
	// Whole: the request in flight asks for the whole list in one response — no limit, or RV
	// 0, which the watch cache serves whole whatever the limit.
	Whole bool `json:"whole,omitempty"`
	// Streaming: the current listing is a watch-list stream (sendInitialEvents).
	Streaming bool `json:"streaming,omitempty"`
	// StreamFailed: the current listing's watch-list failed in a way that may be its own (a
	// server error, an error the client cannot classify, an ERROR event before the end
	// bookmark): the listing goes on by LIST, and the next listing tries the watch-list again
	// (docs/semantics.md, "Streaming list").
	StreamFailed bool `json:"streamFailed,omitempty"`
	// EndTimer is the deadline armed while a watch-list stream is in its initial phase (0:
	// none), and HeardAt when it last delivered: initial events that fall silent past their
	// bound without the end bookmark mean the bookmark is not coming (docs/semantics.md,
	// "Streaming list").
	EndTimer uint64    `json:"endTimer,omitempty"`
	HeardAt  time.Time `json:"heardAt,omitzero"`
	// Staged counts the stage commands (items, pages, initial events) of the listing in
	// progress, so that a failed listing knows whether there is anything to discard.
	Staged int `json:"staged,omitempty"`
	// PageItems counts the items of the page in flight that were staged one by one as they
	// arrived (EvListItem): the page's end stages nothing more, and a page that breaks off
	// and is retried discards just them.
	PageItems int `json:"pageItems,omitempty"`
}

// ServerFacts is what the server's answers have shown about it; it outlives every listing.
type ServerFacts struct {
	// Pages: the server answered a LIST at RV 0 in pages, so no watch cache serves this
	// resource: relists at a known RV page too. Until then a relist at a known RV asks for
	// everything in one response, which the watch cache serves. A paged answer to any other
	// LIST says nothing: the v1.37 watch cache pages a consistent read and a read at a given
	// RV with a limit (docs/semantics.md, "Requests").
	Pages bool `json:"pages,omitempty"`
	// WholeListsFail: a whole list could not be taken — larger than MaxListBytes, or timed out
	// while the server built it — so every LIST pages from then on, a first one as a
	// consistent read (RV 0 is served whole whatever the limit; docs/semantics.md, "A list
	// that cannot be served whole").
	WholeListsFail bool `json:"wholeListsFail,omitempty"`
	// PageLimit is the LIST limit once a page came back larger than MaxListBytes: half the
	// limit that failed, at least 1 (0: the configured PageSize). It stays for the
	// reflector's life: the objects that made a page too large are still there.
	PageLimit int64 `json:"pageLimit,omitempty"`
	// WatchListUnsupported: the server refused watch-list once; LIST from then on.
	WatchListUnsupported bool `json:"watchListUnsupported,omitempty"`
	// WatchListServed: the server ended a watch-list's initial events once, so it serves
	// watch-lists: a later 401 or 403 to one refuses the request, as to a LIST, and says
	// nothing of support (a restarted kube-apiserver's authorizer before its caches synced).
	WatchListServed bool `json:"watchListServed,omitempty"`
}

// WatchState is the current watch stream, and the streaks that span watches.
type WatchState struct {
	// Open, OpenedAt and Events describe the current stream.
	Open     bool      `json:"open,omitempty"`
	OpenedAt time.Time `json:"openedAt,omitzero"`
	Events   int       `json:"events,omitempty"`
	// Progressed: the current stream has moved LastRV (an object event, or a bookmark with a
	// new RV). A stream that has not counts as delivering nothing when it ends quickly.
	Progressed bool `json:"progressed,omitempty"`
	// The streaks that span watches, each ended where the rule that counts it says
	// (transitions/rules_watch.go):
	// QuickEnds counts consecutive watches that ended quickly without moving the RV.
	QuickEnds Streak `json:"quickEnds,omitzero"`
	// ExpiredStreak counts 410s since the last watch event.
	ExpiredStreak Streak `json:"expiredStreak,omitzero"`
	// Rejected counts the watches and LISTs refused with a client error (401, 403, 404, …)
	// since a watch last opened or a listing completed; after one, a second refused watch
	// relists, and a second refused LIST waits the grown backoff.
	Rejected Streak `json:"rejected,omitzero"`
	// FreshTried: a 410 from a watch cache younger than LastRV was answered by a re-watch on
	// a fresh connection, and no watch event has arrived since; the next 410 relists.
	FreshTried Streak `json:"freshTried,omitzero"`

	// Silence is the stream's cadence and deadline (docs/semantics.md, "silent watch").
	Silence WatchSilence `json:"silence,omitzero"`
}

// WatchSilence is what the silence rule knows of the streams: how often they deliver, and
// the deadline of the watch in flight. The cadence spans watches (it is the resource's);
// the deadline is the current watch's.
type WatchSilence struct {
	// LastFrame is when the last frame (event or bookmark) arrived, on this watch or one
	// before it since the last full state: the gap to the next frame spans a re-watch, so the
	// silence that ended a watch counts in the cadence. Zero: no frame since the last listing.
	LastFrame Instant `json:"lastFrame,omitempty"`
	// Gap is the cadence: the longest gap between frames, decaying by 1/64 at every frame, so
	// that it follows a stream that speeds up within a few dozen frames and is not pulled
	// down by one burst. GapKnown: a gap has been measured.
	Gap      time.Duration `json:"gap,omitempty"`
	GapKnown bool          `json:"gapKnown,omitempty"`
	// For is the watch request the deadline belongs to, HeardAt when that watch was asked for
	// or opened, or a catch-up's frame came (the later of it and LastFrame is when the watch
	// last showed life), and Timer the armed deadline (0: none; the transport's WatchSilence
	// bound is the only one).
	For     uint64  `json:"for,omitempty"`
	HeardAt Instant `json:"heardAt,omitempty"`
	Timer   uint64  `json:"timer,omitempty"`
	// Cuts counts the watches ended for silence since the last frame: each next watch's
	// bound triples, so that a stream that fell quiet for good is not cut again and again.
	Cuts int `json:"cuts,omitempty"`
}

// ResumeState is a start from a persisted snapshot (docs/semantics.md, "Persisted cache"):
// the probe that says whether it can be resumed, and, once restored, the catch-up that makes
// it synced.
type ResumeState struct {
	// RV and Items are the snapshot's (EvStart), kept until the probe has answered.
	RV    string `json:"rv,omitempty"`
	Items int    `json:"items,omitempty"`
	// Probing: the probe (a consistent LIST of Limit items) is in flight or waited for; its
	// page's resourceVersion is the consistent read taken at start, and a page without a
	// continue token the whole collection. Verifying: the probe left the snapshot's history
	// unproven, and the LIST at the snapshot's own resourceVersion (Exact) that proves it is in
	// flight or waited for.
	Probing   bool  `json:"probing,omitempty"`
	Limit     int64 `json:"limit,omitempty"`
	Verifying bool  `json:"verifying,omitempty"`
	// Witnessed and Contradicted are what the items of the probe and the verification said of
	// the snapshot's history: an item as it was at the snapshot's resourceVersion that the
	// snapshot holds (same key, resourceVersion and uid) witnesses it; one it does not hold
	// contradicts it (docs/semantics.md, "Persisted cache").
	Witnessed    bool `json:"witnessed,omitempty"`
	Contradicted bool `json:"contradicted,omitempty"`
	// CatchingUp: the store holds the restored snapshot and the watch resumes from its RV;
	// Synced waits for a watch event or bookmark at or past Target, the probe's
	// resourceVersion, or a completed relist.
	CatchingUp bool   `json:"catchingUp,omitempty"`
	Target     uint64 `json:"target,omitempty"`
	// Timeout is the timeoutSeconds the catch-up watch in flight asked for: a watch the server
	// ends cleanly at that deadline has caught up. LastFrame is when it last delivered a frame:
	// a catch-up's frames are a backlog sent back to back and a bookmark timed by its short
	// deadline, which say nothing of the resource's cadence (Watch.Silence does not learn them).
	Timeout   int64   `json:"timeout,omitempty"`
	LastFrame Instant `json:"lastFrame,omitempty"`
}

// WaitState is the backoff: the timer armed, where it leads, and how far the backoff has gone.
type WaitState struct {
	// Next is, in Backoff, the state the armed timer leads to.
	Next State `json:"next,omitempty"`
	// Timer is the id of the armed timer (0: none).
	Timer uint64 `json:"timer,omitempty"`
	// Attempt is how many backoff waits have happened since the last progress. An honoured
	// Retry-After does not count.
	Attempt int `json:"attempt,omitempty"`
}

// InternalStreak is the current streak of InternalErrors. Only progress or a completed LIST
// ends a streak.
type InternalStreak struct {
	// Start is when the streak began, Rewatches how many watches it has re-opened since; they
	// mean something while the streak is live (Live).
	Start     time.Time `json:"start,omitzero"`
	Rewatches int       `json:"rewatches,omitempty"`
	// Streak is the streak's life: counted at its first error, ended by the moments its rule
	// names.
	Streak Streak `json:"streak,omitzero"`
}

// Live reports whether a streak of InternalErrors is under way.
func (k *InternalStreak) Live(m *Moments) bool { return k.Streak.Count(m) > 0 }

// RetryAfterRun counts the honoured Retry-After waits since the server last accepted a request
// (answered a LIST page, opened a watch): from the second on, a Retry-After is spread
// (docs/semantics.md, "a repeated Retry-After").
type RetryAfterRun struct {
	Repeats int `json:"repeats,omitempty"`
}

// RelistsKept is how many relists RelistHistory remembers: how far back a rule about relists
// can look.
const RelistsKept = 8

// RelistHistory is when the last relists began: what every rule about relists (how many, how
// often) reads, so that such a rule needs no state of its own (docs/design.md, "How to add a
// rule about relists"). A relist begins when its first LIST goes out, at once or after the
// wait its row began; the retries within one relist (a LIST that failed, a first page asked
// again at RV "") are not new relists. It is kept in a fixed ring, so that a snapshot stays a
// plain value that copies without aliasing.
type RelistHistory struct {
	// Count counts the relists begun since the reflector started.
	Count int `json:"count,omitempty"`
	// Began holds when the last RelistsKept relists began, in a ring indexed by Count (see
	// Recent).
	Began [RelistsKept]time.Time `json:"began,omitzero"`
}

// Note records a relist beginning at now.
func (h *RelistHistory) Note(now time.Time) {
	h.Began[h.Count%RelistsKept] = now
	h.Count++
}

// Recent returns when the k-th most recent relist began (k = 0: the last one), and false when
// the history does not reach back that far: fewer than k+1 relists, or k ≥ RelistsKept.
func (h *RelistHistory) Recent(k int) (time.Time, bool) {
	if k < 0 || k >= RelistsKept || k >= h.Count {
		return time.Time{}, false
	}
	return h.Began[(h.Count-1-k)%RelistsKept], true
}

// Instant is a time as the hot path keeps it: Unix nanoseconds, 0 for none. A watch's frames
// note when they came; as a time.Time that costs a third of a frame's step (the overflow
// checks of Sub, 24-byte writes), as an integer a subtraction (docs/design.md, "The hot path
// and stateless"). The machine's times are the events' (Event.Now), wall readings well within
// the years an int64 of nanoseconds holds.
type Instant int64

// InstantOf is t as an Instant.
func InstantOf(t time.Time) Instant { return Instant(t.UnixNano()) }

// Time is the instant as a time.Time (UTC), the zero time for none.
func (i Instant) Time() time.Time {
	if i == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(i)).UTC()
}

// Sub is the duration i − j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

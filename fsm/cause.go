package fsm

// Cause names why a transition is taken: the classified reading of one event in one state. It is
// the trigger of the stateless machine and the label of a diagram edge.
//
// Everything that is per cause is declared once, in its CauseInfo (causeDecls below); where the
// cause leads is fsm.Table's alone, and so is whether it begins a relist (BeginsRelist).
// docs/design.md, "How to add a cause".
type Cause uint8

const (
	NoCause Cause = iota

	// Listing and Relisting.
	CauseStart
	CauseListItem
	CauseListPageMore
	CauseListComplete
	CauseListExpired
	CauseContinueExpired
	CauseListFailed
	CauseListRejected
	CauseWatchListOpened
	CauseInitialEvent
	CauseInitialEventsEnd
	CauseWatchListUnsupported
	CauseInitialTransferCut
	CauseWholeListRefused
	CausePageTooLarge

	// Watching.
	CauseWatchOpened
	CauseWatchEvent
	CauseServerBusy
	CauseInternalErrorInWindow
	CauseInternalErrorPastWindow
	CauseConnectFailed
	CauseStreamEnded
	CauseStreamEndedQuickly
	CauseExpired
	CauseExpiredAgain
	CauseExpiredYoungCache
	CauseTooLargeRV
	CauseWatchRejectedOnce
	CauseWatchRejected
	CauseRelistDeferred
	CauseWatchSilent
	CauseSilenceCheck

	// Backoff.
	CauseRetryWatch
	CauseRetryRelist
	CauseRetryList

	// Any state but Stopped.
	CauseStop

	numCauses
)

// CauseInfo is everything that is per cause, apart from the rows of fsm.Table that admit it.
// Stats, metrics, the machine's effects, the diagrams and the journal read these facts from
// here rather than keeping lists of causes of their own.
type CauseInfo struct {
	// ID names the cause in journals, JSON, transcripts, logs and metric labels. A journal
	// written with it must stay readable: rename a cause by moving its old ID to Aliases.
	ID string
	// Aliases are earlier IDs of the cause, still read from old journals (never written).
	Aliases []string
	// Label is what its diagram edges say.
	Label string
	// Classes are the failure classes (transitions.classify) that can lead to the cause; empty
	// for a cause that answers no failure.
	Classes Classes
	// Retry: the cause is a failure the reflector answers by trying again (Stats.Retries).
	Retry bool
	// AvoidsList: the failure is answered by a re-watch where a relist-on-error reflector would
	// have listed everything again (Stats.ListsAvoided).
	AvoidsList Avoidance
	// Accepted: the server took a request (answered a LIST page, opened a stream), so a
	// Retry-After after it is a new rejection rather than a repeat (docs/semantics.md, "a
	// repeated Retry-After").
	Accepted bool
}

// Avoidance says when a cause avoids a LIST that a relist-on-error reflector would make.
type Avoidance uint8

const (
	// AvoidsNoList: the cause is not a watch failure, or is answered by a LIST anyway.
	AvoidsNoList Avoidance = iota
	// AvoidsList: always.
	AvoidsList
	// AvoidsListIfFailed: only when the event carried a failure (a stream that ended with an
	// error and is re-opened, as opposed to a watch that timed out as asked).
	AvoidsListIfFailed
)

// Avoids reports whether the cause avoided a LIST, for an event that carried a failure or not.
func (a Avoidance) Avoids(failed bool) bool {
	return a == AvoidsList || a == AvoidsListIfFailed && failed
}

var (
	listFailureClasses  = ClassesOf(ClassBusy, ClassInternal, ClassTransport, ClassExpired, ClassTooLargeRV)
	rvUnusableClasses   = ClassesOf(ClassExpired, ClassTooLargeRV)
	transferCutClasses  = ClassesOf(ClassBusy, ClassInternal, ClassTransport, ClassExpired, ClassTooLargeRV, ClassRejected)
	rejectedClasses     = ClassesOf(ClassRejected)
	internalErrorsClass = ClassesOf(ClassInternal)
)

// causeDecls declares every cause: one line of facts each.
var causeDecls = [numCauses]CauseInfo{
	NoCause: {},

	CauseStart:        {ID: "start", Label: "start: LIST RV=0"},
	CauseListItem:     {ID: "list-item", Label: "LIST item → stage", Accepted: true},
	CauseListPageMore: {ID: "list-page-more", Label: "page with continue → next page", Accepted: true},
	CauseListComplete: {ID: "list-complete", Label: "last page → Replace, WATCH from list RV", Accepted: true},
	CauseListExpired: {ID: "list-expired", Label: "410 / too large RV → LIST RV=\"\"",
		Classes: rvUnusableClasses, Retry: true},
	CauseContinueExpired: {ID: "continue-expired", Label: "continue expired → one full LIST at RV",
		Classes: rvUnusableClasses, Retry: true},
	CauseListFailed: {ID: "list-failed", Label: "LIST failed (429/5xx/transport) → Retry-After or backoff",
		Classes: listFailureClasses, Retry: true},
	CauseListRejected: {ID: "list-rejected", Label: "LIST refused (401/403/404/other 4xx) → backoff, warn",
		Classes: rejectedClasses, Retry: true},
	CauseWatchListOpened:  {ID: "watch-list-opened", Label: "watch-list stream opened", Accepted: true},
	CauseInitialEvent:     {ID: "initial-event", Label: "initial event → stage", Accepted: true},
	CauseInitialEventsEnd: {ID: "initial-events-end", Label: "initial-events-end bookmark → Replace"},
	CauseWatchListUnsupported: {ID: "watch-list-unsupported", Label: "watch-list unsupported → paginated LIST",
		Classes: rejectedClasses, Retry: true},
	CauseInitialTransferCut: {ID: "initial-transfer-cut", Label: "initial transfer cut",
		Classes: transferCutClasses, Retry: true},
	// A whole list (no limit, or RV 0, which the watch cache serves whole) that came back too
	// large for MaxListBytes (a transport fact), or timed out while the server built it (a
	// 504): lists page from then on.
	CauseWholeListRefused: {ID: "whole-list-refused", Label: "whole LIST too large / timed out → pages",
		Classes: ClassesOf(ClassTransport, ClassBusy), Retry: true},
	// A page with a limit that came back larger than MaxListBytes: the same page again at once
	// with half the limit, which later LISTs keep (docs/semantics.md, "A list that cannot be
	// served whole").
	CausePageTooLarge: {ID: "page-too-large", Label: "page too large → same page, half the limit",
		Classes: ClassesOf(ClassTransport), Retry: true},

	CauseWatchOpened: {ID: "watch-opened", Label: "watch opened", Accepted: true},
	// A frame on a stream not yet reported open counts as its opening, and so as accepted
	// (transitions' watchEvent); any later frame finds nothing to reset.
	CauseWatchEvent: {ID: "watch-event", Label: "ADDED / MODIFIED / DELETED / BOOKMARK"},
	// Named for what it covers (429, 503, 504 server timeout); journals before the rename
	// called it too-many-requests.
	CauseServerBusy: {ID: "server-busy", Aliases: []string{"too-many-requests"}, Label: "429 / Retry-After (also 503, server timeout)",
		Classes: ClassesOf(ClassBusy), Retry: true, AvoidsList: AvoidsList},
	CauseInternalErrorInWindow: {ID: "internal-error-in-window", Label: "InternalError within window",
		Classes: internalErrorsClass, Retry: true, AvoidsList: AvoidsList},
	CauseInternalErrorPastWindow: {ID: "internal-error-past-window", Label: "InternalError past window, or StorageReadError → LIST at last RV",
		Classes: internalErrorsClass, Retry: true},
	CauseConnectFailed: {ID: "connect-failed", Label: "refused / reset / EOF before open",
		Classes: ClassesOf(ClassTransport), Retry: true, AvoidsList: AvoidsList},
	CauseStreamEnded: {ID: "stream-ended", Label: "stream end → re-WATCH at once",
		Retry: true, AvoidsList: AvoidsListIfFailed},
	CauseStreamEndedQuickly: {ID: "stream-ended-quickly", Label: "repeated quick stream ends",
		Retry: true, AvoidsList: AvoidsList},
	CauseExpired: {ID: "expired", Label: "410 Gone / Expired → LIST at last RV",
		Classes: ClassesOf(ClassExpired), Retry: true},
	CauseExpiredAgain: {ID: "expired-again", Label: "410 again without progress",
		Classes: ClassesOf(ClassExpired), Retry: true},
	// A watch cache started after the resume RV (a kube-apiserver restarted behind a load
	// balancer) answers the resume 410 where another kube-apiserver would not: one re-watch on
	// a fresh connection first (docs/semantics.md, "behind a load balancer").
	CauseExpiredYoungCache: {ID: "expired-young-cache", Label: "410 from a watch cache younger than the RV → re-WATCH on a fresh connection",
		Classes: ClassesOf(ClassExpired), Retry: true, AvoidsList: AvoidsList},
	CauseTooLargeRV: {ID: "too-large-rv", Label: "too large RV → wait (Retry-After), LIST RV=\"\"",
		Classes: ClassesOf(ClassTooLargeRV), Retry: true},
	// The first refusal since a watch was last accepted re-watches after the wait: right after
	// an apiserver restart the authorizer may answer 403 before its caches have synced
	// (docs/semantics.md, "watch refused").
	CauseWatchRejectedOnce: {ID: "watch-rejected-once", Label: "401 / 403 / 404 / other, first → re-WATCH after backoff",
		Classes: rejectedClasses, Retry: true, AvoidsList: AvoidsList},
	CauseWatchRejected: {ID: "watch-rejected", Label: "401 / 403 / 404 / other, again",
		Classes: rejectedClasses, Retry: true},
	// A relist the relist rules hold back (transitions' relistWait), whatever watch failure
	// began it: the event says which. No rule holds one back unless configured
	// (docs/semantics.md, "Relists").
	CauseRelistDeferred: {ID: "relist-deferred", Label: "relist held back by a relist rule",
		Retry: true},
	// A stream that was delivering and fell silent for longer than its bound, which follows
	// the stream's cadence (docs/semantics.md, "silent watch"): ended by the machine and
	// re-opened from the last RV on a fresh connection, before the RV can leave the server's
	// watch cache. A stream silent from the start is the transport's (WatchSilence) and ends
	// as stream-ended.
	CauseWatchSilent: {ID: "watch-silent", Label: "stream silent past its cadence's bound → re-WATCH from last RV, fresh connection",
		Retry: true, AvoidsList: AvoidsList},
	// The deadline of a stream that delivered since it was armed: the next one is armed.
	CauseSilenceCheck: {ID: "silence-check", Label: "deadline, stream delivering → next deadline"},

	CauseRetryWatch:  {ID: "retry-watch", Label: "timer → WATCH from last RV"},
	CauseRetryRelist: {ID: "retry-relist", Label: "timer → LIST at last RV"},
	CauseRetryList:   {ID: "retry-list", Label: "timer → retry initial LIST"},

	CauseStop: {ID: "stop", Label: "stop"},
}

// Causes lists every cause in declaration order.
func Causes() []Cause {
	out := make([]Cause, 0, numCauses-1)
	for c := NoCause + 1; c < numCauses; c++ {
		out = append(out, c)
	}
	return out
}

// Info returns the cause's declaration (the zero CauseInfo for a value that is no cause).
func (c Cause) Info() CauseInfo {
	if c < numCauses {
		return causeDecls[c]
	}
	return CauseInfo{}
}

// info is Info without the copy, for the hot path.
func (c Cause) info() *CauseInfo {
	if c < numCauses {
		return &causeDecls[c]
	}
	return &causeDecls[NoCause]
}

// Retries, AvoidsList and Accepted read the cause's declaration.
func (c Cause) Retries() bool               { return c.info().Retry }
func (c Cause) AvoidsList(failed bool) bool { return c.info().AvoidsList.Avoids(failed) }
func (c Cause) Accepted() bool              { return c.info().Accepted }
func (c Cause) Classes() Classes            { return c.info().Classes }

// BeginsRelist reports whether the cause's rows begin a relist (Transition.BeginsRelist): it
// ends a watch that cannot be resumed, so the synced store is listed again, at once or after a
// wait. It is read from fsm.Table, which holds a cause's rows to all begin a relist or none, so
// that a wait's cause (Snapshot.Cause in Backoff) says whether its timer begins one.
func (c Cause) BeginsRelist() bool { return c < numCauses && tableIndex.relists[c] }

// causeNames is the ID column of causeDecls, for the text methods every enum shares; aliases
// are read as well.
var causeNames = func() enumNames[Cause] {
	n := enumNames[Cause]{typ: "Cause", kind: "cause", names: make([]string, numCauses)}
	for c, info := range causeDecls {
		n.names[c] = info.ID
	}
	return n
}()

// causeAliases maps every earlier ID to its cause.
var causeAliases = func() map[string]Cause {
	m := map[string]Cause{}
	for c, info := range causeDecls {
		for _, a := range info.Aliases {
			m[a] = Cause(c)
		}
	}
	return m
}()

// String is the stable identifier used in journals and transcripts.
func (c Cause) String() string               { return causeNames.String(c) }
func (c Cause) MarshalText() ([]byte, error) { return causeNames.MarshalText(c) }

// UnmarshalText reads a cause's ID or one of its aliases.
func (c *Cause) UnmarshalText(b []byte) error {
	if alias, ok := causeAliases[string(b)]; ok {
		*c = alias
		return nil
	}
	return causeNames.UnmarshalText(c, b)
}

// Label is the human description used on diagram edges.
func (c Cause) Label() string {
	if c < numCauses {
		return causeDecls[c].Label
	}
	return c.String()
}

package fsm

// Cause names why a transition is taken: the classified reading of one event in one state. It is
// the trigger of the stateless machine and the label of a diagram edge.
//
// Here a cause is a name (causeIDs below: the journal's vocabulary). Everything else about it —
// how an event is read as it, its rows, its facts, its effect — is declared once, in its rule in
// package transitions, from which the table (transitions.Table, an fsm.Table) is derived.
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
	CauseWatchListNoEnd
	CauseWatchListFailed
	CauseInitialEventsCheck
	CauseStartFromSnapshot
	CauseProbeItem
	CauseResume
	CauseSnapshotAhead
	CauseProbeWhole
	CauseSnapshotForeign
	CauseVerifySnapshot
	CauseSnapshotUnverifiable
	CauseListRefreshCredentials
	CauseListStalled

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
	CauseRefreshCredentials
	CauseCredentialsRefreshed
	CauseCatchUpMissed
	CauseCaughtUpAtDeadline
	CauseServerUnreachable

	// Backoff.
	CauseRetryWatch
	CauseRetryRelist
	CauseRetryList

	// Any state but Stopped.
	CauseStop

	numCauses
)

// causeName is a cause's name in journals, JSON, transcripts, logs and metric labels. A journal
// written with it must stay readable: rename a cause by moving its old ID to Aliases.
type causeName struct {
	ID string
	// Aliases are earlier IDs of the cause, still read from old journals (never written).
	Aliases []string
}

// causeNames declares every cause's name. What a cause means — how an event is read as it, its
// rows, its facts and its effect — is its rule's, in package transitions (docs/design.md, "A
// rule is the unit of change").
var causeIDs = [numCauses]causeName{
	NoCause: {},

	CauseStart:                  {ID: "start"},
	CauseListItem:               {ID: "list-item"},
	CauseListPageMore:           {ID: "list-page-more"},
	CauseListComplete:           {ID: "list-complete"},
	CauseListExpired:            {ID: "list-expired"},
	CauseContinueExpired:        {ID: "continue-expired"},
	CauseListFailed:             {ID: "list-failed"},
	CauseListRejected:           {ID: "list-rejected"},
	CauseWatchListOpened:        {ID: "watch-list-opened"},
	CauseInitialEvent:           {ID: "initial-event"},
	CauseInitialEventsEnd:       {ID: "initial-events-end"},
	CauseWatchListUnsupported:   {ID: "watch-list-unsupported"},
	CauseInitialTransferCut:     {ID: "initial-transfer-cut"},
	CauseWholeListRefused:       {ID: "whole-list-refused"},
	CausePageTooLarge:           {ID: "page-too-large"},
	CauseWatchListNoEnd:         {ID: "watch-list-no-end"},
	CauseWatchListFailed:        {ID: "watch-list-failed"},
	CauseInitialEventsCheck:     {ID: "initial-events-check"},
	CauseStartFromSnapshot:      {ID: "start-from-snapshot"},
	CauseProbeItem:              {ID: "probe-item"},
	CauseResume:                 {ID: "resume"},
	CauseSnapshotAhead:          {ID: "snapshot-ahead"},
	CauseProbeWhole:             {ID: "probe-whole"},
	CauseSnapshotForeign:        {ID: "snapshot-foreign"},
	CauseVerifySnapshot:         {ID: "verify-snapshot"},
	CauseSnapshotUnverifiable:   {ID: "snapshot-unverifiable"},
	CauseListRefreshCredentials: {ID: "list-refresh-credentials"},
	CauseListStalled:            {ID: "list-stalled"},

	CauseWatchOpened: {ID: "watch-opened"},
	CauseWatchEvent:  {ID: "watch-event"},
	// Journals before it was renamed call it too-many-requests.
	CauseServerBusy:              {ID: "server-busy", Aliases: []string{"too-many-requests"}},
	CauseInternalErrorInWindow:   {ID: "internal-error-in-window"},
	CauseInternalErrorPastWindow: {ID: "internal-error-past-window"},
	CauseConnectFailed:           {ID: "connect-failed"},
	CauseStreamEnded:             {ID: "stream-ended"},
	CauseStreamEndedQuickly:      {ID: "stream-ended-quickly"},
	CauseExpired:                 {ID: "expired"},
	CauseExpiredAgain:            {ID: "expired-again"},
	CauseExpiredYoungCache:       {ID: "expired-young-cache"},
	CauseTooLargeRV:              {ID: "too-large-rv"},
	CauseWatchRejectedOnce:       {ID: "watch-rejected-once"},
	CauseWatchRejected:           {ID: "watch-rejected"},
	CauseRelistDeferred:          {ID: "relist-deferred"},
	CauseWatchSilent:             {ID: "watch-silent"},
	CauseSilenceCheck:            {ID: "silence-check"},
	CauseRefreshCredentials:      {ID: "refresh-credentials"},
	CauseCredentialsRefreshed:    {ID: "credentials-refreshed"},
	CauseCatchUpMissed:           {ID: "catch-up-missed"},
	CauseCaughtUpAtDeadline:      {ID: "caught-up-at-deadline"},
	CauseServerUnreachable:       {ID: "server-unreachable"},

	CauseRetryWatch:  {ID: "retry-watch"},
	CauseRetryRelist: {ID: "retry-relist"},
	CauseRetryList:   {ID: "retry-list"},

	CauseStop: {ID: "stop"},
}

// CauseFacts is what a cause's rule declares about it besides its rows: stats, metrics, the
// machine's step and the diagrams read these facts (Table.Facts) rather than keeping lists of
// causes of their own. NewTable checks them against the rows.
type CauseFacts struct {
	Cause Cause
	// Label is what its diagram edges say.
	Label string
	// Classes are the failure classes (transitions.classify) that can lead to the cause; empty
	// for a cause that answers no failure. Read from how the rule reads events.
	Classes Classes
	// Retry: the cause is a failure the reflector answers by trying again (Stats.Retries).
	// Every cause that avoids a LIST or begins a relist is one.
	Retry bool
	// AvoidsList: the failure is answered by a re-watch where a relist-on-error reflector would
	// have listed everything again (Stats.ListsAvoided).
	AvoidsList Avoidance
	// Accepted: the server took a request (answered a LIST page, opened a stream), so a
	// Retry-After after it is a new rejection rather than a repeat (docs/semantics.md, "a
	// repeated Retry-After").
	Accepted bool
	// Start: the cause answers the start itself, or the probe of a persisted snapshot — the
	// start's, which only the first fill takes (ListingAndRelisting). Read from how the rule
	// reads events.
	Start bool
	// Answer: the cause reads the caller's answer to a question (EvAnswer), so what it does —
	// how long it waits, say — may be the caller's word. Read from how the rule reads events.
	Answer bool
	// HoldsRelist: the cause takes a relist about to begin at once, to hold it back (a relist
	// rule's wait, a question for the caller): its row replaces the relist's, and the relist
	// begins later, on another row.
	HoldsRelist bool
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

// Causes lists every cause in declaration order.
func Causes() []Cause {
	out := make([]Cause, 0, numCauses-1)
	for c := NoCause + 1; c < numCauses; c++ {
		out = append(out, c)
	}
	return out
}

// causeNames is the ID column of causeIDs, for the text methods every enum shares; aliases
// are read as well.
var causeNames = func() enumNames[Cause] {
	n := enumNames[Cause]{typ: "Cause", kind: "cause", names: make([]string, numCauses)}
	for c, info := range causeIDs {
		n.names[c] = info.ID
	}
	return n
}()

// causeAliases maps every earlier ID to its cause.
var causeAliases = func() map[string]Cause {
	m := map[string]Cause{}
	for c, info := range causeIDs {
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

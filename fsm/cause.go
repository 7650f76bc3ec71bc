package fsm

// Cause names why a transition is taken: the classified reading of one event in one state. It is
// the trigger of the stateless machine and the label of a diagram edge.
type Cause uint8

const (
	NoCause Cause = iota

	// Listing and Relisting.
	CauseStart
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

	// Watching.
	CauseWatchOpened
	CauseWatchEvent
	CauseTooManyRequests
	CauseInternalErrorInWindow
	CauseInternalErrorPastWindow
	CauseConnectFailed
	CauseStreamEnded
	CauseStreamEndedQuickly
	CauseExpired
	CauseExpiredAgain
	CauseTooLargeRV
	CauseWatchRejected

	// Backoff.
	CauseRetryWatch
	CauseRetryRelist
	CauseRetryList

	// Any state but Stopped.
	CauseStop

	numCauses
)

// causeInfo holds each cause's stable identifier (journals, JSON, transcripts) and, next to
// it, the label its diagram edges carry.
var causeInfo = [numCauses]struct{ id, label string }{
	NoCause:                      {"", ""},
	CauseStart:                   {"start", "start: LIST RV=0"},
	CauseListPageMore:            {"list-page-more", "page with continue → next page"},
	CauseListComplete:            {"list-complete", "last page → Replace, WATCH from list RV"},
	CauseListExpired:             {"list-expired", "410 / too large RV → LIST RV=\"\""},
	CauseContinueExpired:         {"continue-expired", "continue expired → one full LIST at RV"},
	CauseListFailed:              {"list-failed", "LIST failed (429/5xx/transport) → Retry-After or backoff"},
	CauseListRejected:            {"list-rejected", "LIST refused (401/403/404/other 4xx) → backoff, warn"},
	CauseWatchListOpened:         {"watch-list-opened", "watch-list stream opened"},
	CauseInitialEvent:            {"initial-event", "initial event → stage"},
	CauseInitialEventsEnd:        {"initial-events-end", "initial-events-end bookmark → Replace"},
	CauseWatchListUnsupported:    {"watch-list-unsupported", "watch-list unsupported → paginated LIST"},
	CauseInitialTransferCut:      {"initial-transfer-cut", "initial transfer cut"},
	CauseWatchOpened:             {"watch-opened", "watch opened"},
	CauseWatchEvent:              {"watch-event", "ADDED / MODIFIED / DELETED / BOOKMARK"},
	CauseTooManyRequests:         {"too-many-requests", "429 / Retry-After (also 503, server timeout)"},
	CauseInternalErrorInWindow:   {"internal-error-in-window", "InternalError within window"},
	CauseInternalErrorPastWindow: {"internal-error-past-window", "InternalError past window → LIST at last RV"},
	CauseConnectFailed:           {"connect-failed", "refused / reset / EOF before open"},
	CauseStreamEnded:             {"stream-ended", "stream end → re-WATCH at once"},
	CauseStreamEndedQuickly:      {"stream-ended-quickly", "repeated quick stream ends"},
	CauseExpired:                 {"expired", "410 Gone / Expired → LIST at last RV"},
	CauseExpiredAgain:            {"expired-again", "410 again without progress"},
	CauseTooLargeRV:              {"too-large-rv", "too large RV → LIST RV=\"\""},
	CauseWatchRejected:           {"watch-rejected", "401 / 403 / 404 / other"},
	CauseRetryWatch:              {"retry-watch", "timer → WATCH from last RV"},
	CauseRetryRelist:             {"retry-relist", "timer → LIST at last RV"},
	CauseRetryList:               {"retry-list", "timer → retry initial LIST"},
	CauseStop:                    {"stop", "stop"},
}

// Causes lists every cause in declaration order.
func Causes() []Cause {
	out := make([]Cause, 0, numCauses-1)
	for c := NoCause + 1; c < numCauses; c++ {
		out = append(out, c)
	}
	return out
}

// causeNames is the identifier column of causeInfo, for the text methods every enum shares.
var causeNames = func() enumNames[Cause] {
	n := enumNames[Cause]{typ: "Cause", kind: "cause", names: make([]string, numCauses)}
	for c, info := range causeInfo {
		n.names[c] = info.id
	}
	return n
}()

// String is the stable identifier used in journals and transcripts.
func (c Cause) String() string                { return causeNames.String(c) }
func (c Cause) MarshalText() ([]byte, error)  { return causeNames.MarshalText(c) }
func (c *Cause) UnmarshalText(b []byte) error { return causeNames.UnmarshalText(c, b) }

// Label is the human description used on diagram edges.
func (c Cause) Label() string {
	if c < numCauses {
		return causeInfo[c].label
	}
	return c.String()
}

package fsm

import "fmt"

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

// causeInfo holds each cause's stable identifier (journals, JSON) and its diagram label.
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
	CauseInitialTransferCut:      {"initial-transfer-cut", "initial transfer cut → backoff"},
	CauseWatchOpened:             {"watch-opened", "watch opened"},
	CauseWatchEvent:              {"watch-event", "ADDED / MODIFIED / DELETED / BOOKMARK"},
	CauseTooManyRequests:         {"too-many-requests", "429 / Retry-After (also 503, server timeout)"},
	CauseInternalErrorInWindow:   {"internal-error-in-window", "InternalError within window"},
	CauseInternalErrorPastWindow: {"internal-error-past-window", "InternalError past window → LIST at last RV"},
	CauseConnectFailed:           {"connect-failed", "refused / reset / EOF before open"},
	CauseStreamEnded:             {"stream-ended", "stream end → re-WATCH at once"},
	CauseStreamEndedQuickly:      {"stream-ended-quickly", "repeated quick stream ends → backoff"},
	CauseExpired:                 {"expired", "410 Gone / Expired → LIST at last RV"},
	CauseExpiredAgain:            {"expired-again", "410 again without progress → backoff"},
	CauseTooLargeRV:              {"too-large-rv", "too large RV → LIST RV=\"\""},
	CauseWatchRejected:           {"watch-rejected", "401 / 403 / 404 / other → backoff, relist"},
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

// String is the stable identifier used in journals and transcripts.
func (c Cause) String() string {
	if c < numCauses {
		return causeInfo[c].id
	}
	return fmt.Sprintf("Cause(%d)", uint8(c))
}

// Label is the human description used on diagram edges.
func (c Cause) Label() string {
	if c < numCauses {
		return causeInfo[c].label
	}
	return c.String()
}

func (c Cause) MarshalText() ([]byte, error) {
	if c >= numCauses {
		return nil, errUnknown("cause", uint8(c))
	}
	return []byte(causeInfo[c].id), nil
}

func (c *Cause) UnmarshalText(b []byte) error {
	for i := range causeInfo {
		if causeInfo[i].id == string(b) {
			*c = Cause(i)
			return nil
		}
	}
	return errUnknownName("cause", b)
}

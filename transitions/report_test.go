package transitions_test

import (
	"testing"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// A fallback from a watch-list to a LIST is no failure a watch-error handler hears of, as
// client-go's reflector hands its handler none; every other failure is (docs/semantics.md,
// "Visibility").
func TestReportedLeavesOutWatchListFallbacks(t *testing.T) {
	for _, c := range []fsm.Cause{fsm.NoCause, fsm.CauseWatchListUnsupported, fsm.CauseWatchListFailed} {
		if transitions.Reported(c) {
			t.Errorf("%s is reported", c)
		}
	}
	for _, c := range []fsm.Cause{fsm.CauseListFailed, fsm.CauseListRejected, fsm.CauseWatchRejected, fsm.CauseInitialTransferCut, fsm.CauseServerBusy} {
		if !transitions.Reported(c) {
			t.Errorf("%s is not reported", c)
		}
	}
}

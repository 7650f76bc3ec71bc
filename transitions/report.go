package transitions

import "github.com/rewatch/rewatch/fsm"

// Reported says whether a failure the machine read as cause is one the reflector hands the
// caller's watch-error handler (rewatch.Config.WatchErrorHandler, an informer's
// SetWatchErrorHandler), as client-go's reflector hands its WatchErrorHandler the errors that
// end a ListAndWatch: every failure the reflector answers, but a watch-list it falls back from
// to a LIST (watch-list-unsupported, watch-list-failed), which client-go's reflector only logs
// at V(4) before it lists — a handler that counts failures, or exits on one, must not hear of
// a fallback that lost nothing (docs/semantics.md, "Visibility").
func Reported(cause fsm.Cause) bool {
	switch cause {
	case fsm.NoCause, fsm.CauseWatchListUnsupported, fsm.CauseWatchListFailed:
		return false
	}
	return true
}

package transitions

import "github.com/rewatch/rewatch/fsm"

// Resyncs says whether a store resync that falls due now runs (the driver's ResyncPeriod): only
// while the store holds a full state and no listing is under way or waited for — Watching, or
// waiting to re-watch — as client-go's reflector resyncs its store only between a completed
// LIST and the end of the watch that follows it. A resync that falls due otherwise is skipped,
// and the period starts again from the next full state (docs/semantics.md, "Stores").
func Resyncs(s *fsm.Snapshot) bool {
	if !s.Synced {
		return false
	}
	switch s.State {
	case fsm.Watching:
		return true
	case fsm.Backoff:
		return s.Wait.Next == fsm.Watching
	}
	return false
}

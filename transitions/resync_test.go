package transitions_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/transitions"
)

// docs/semantics.md, "Stores": a resync that falls due runs only while the store holds a full
// state and no listing is under way or waited for.
func TestResyncsOnlyBetweenAListAndTheEndOfTheWatch(t *testing.T) {
	for name, tc := range map[string]struct {
		s    fsm.Snapshot
		want bool
	}{
		"watching":                       {fsm.Snapshot{State: fsm.Watching, Synced: true}, true},
		"waiting to re-watch":            {fsm.Snapshot{State: fsm.Backoff, Synced: true, Wait: fsm.WaitState{Next: fsm.Watching}}, true},
		"waiting to relist":              {fsm.Snapshot{State: fsm.Backoff, Synced: true, Wait: fsm.WaitState{Next: fsm.Relisting}}, false},
		"relisting":                      {fsm.Snapshot{State: fsm.Relisting, Synced: true}, false},
		"listing the initial state":      {fsm.Snapshot{State: fsm.Listing}, false},
		"stopped":                        {fsm.Snapshot{State: fsm.Stopped, Synced: true}, false},
		"watching before any full state": {fsm.Snapshot{State: fsm.Watching}, false},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, transitions.Resyncs(&tc.s))
		})
	}
}

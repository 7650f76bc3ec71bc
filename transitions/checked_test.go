package transitions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

func TestConfigRejectsNonsense(t *testing.T) {
	_, err := New(Config{InternalErrorWindow: -1})
	require.ErrorContains(t, err, "InternalErrorWindow must not be negative")
	_, err = New(Config{WatchTimeoutMin: 10e9, WatchTimeoutMax: 5e9})
	require.ErrorContains(t, err, "watch timeout range")
	_, err = New(Config{QuickEndsBeforeBackoff: -3})
	require.ErrorContains(t, err, "QuickEndsBeforeBackoff")
	// docs/semantics.md "Floor": a Retry-After cap under the floor would undercut it.
	_, err = New(Config{RetryAfterCap: time.Millisecond})
	require.ErrorContains(t, err, "RetryAfterCap must be at least 100ms")
	_, err = New(Config{RetryAfterCap: MinWait})
	require.NoError(t, err)
	_, err = New(Config{WatchSilence: 500 * time.Millisecond})
	require.ErrorContains(t, err, "WatchSilence must be at least 1s")
}

// docs/semantics.md "silent watch": every watch the machine opens carries the silence bound,
// the default unless set; a negative WatchSilence sends none.
func TestWatchCommandsCarryTheSilenceBound(t *testing.T) {
	for _, tc := range []struct {
		set, want time.Duration
	}{{0, DefaultWatchSilence}, {3 * time.Second, 3 * time.Second}, {-1, 0}} {
		for _, watchList := range []bool{false, true} {
			m := MustNew(Config{WatchSilence: tc.set, WatchList: watchList})
			s := m.Initial()
			out := m.Step(&s, &fsm.Event{Kind: fsm.EvStart}, nil)
			if !watchList {
				out = m.Step(&s, &fsm.Event{Kind: fsm.EvListPage, Request: s.Request, ResourceVersion: "100"}, nil)
			}
			var watches int
			for _, c := range out {
				if c.Kind == fsm.CmdOpenWatch {
					watches++
					require.Equal(t, tc.want, c.SilenceBound, "WatchSilence %v, watch-list %v", tc.set, watchList)
				}
			}
			require.Equal(t, 1, watches)
		}
	}
}

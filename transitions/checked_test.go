package transitions

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/fsm"
)

func TestCheckedStepAgreesWithStateless(t *testing.T) {
	m := MustNew(Config{})
	s := m.Initial()
	var out []fsm.Command
	var err error
	for _, e := range []fsm.Event{
		{Kind: fsm.EvStart, Now: benchT0},
		{Kind: fsm.EvListPage, Now: benchT0, Request: 1, ResourceVersion: "7"},
		{Kind: fsm.EvWatchOpened, Now: benchT0, Request: 2},
		{Kind: fsm.EvWatchEvent, Now: benchT0, Request: 2, Type: fsm.Added, ResourceVersion: "8", Key: "ns/a"},
		{Kind: fsm.EvWatchOpened, Now: benchT0, Request: 99}, // stale: ignored, still fine
		{Kind: fsm.EvStop, Now: benchT0},
	} {
		out, err = m.CheckedStep(&s, &e, out[:0])
		require.NoError(t, err)
	}
	require.Equal(t, fsm.Stopped, s.State)
}

func TestConfigRejectsNonsense(t *testing.T) {
	_, err := New(Config{InternalErrorWindow: -1})
	require.ErrorContains(t, err, "InternalErrorWindow must not be negative")
	_, err = New(Config{WatchTimeoutMin: 10e9, WatchTimeoutMax: 5e9})
	require.ErrorContains(t, err, "watch timeout range")
	_, err = New(Config{QuickEndsBeforeBackoff: -3})
	require.ErrorContains(t, err, "QuickEndsBeforeBackoff")
}

package transitions

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigRejectsNonsense(t *testing.T) {
	_, err := New(Config{InternalErrorWindow: -1})
	require.ErrorContains(t, err, "InternalErrorWindow must not be negative")
	_, err = New(Config{WatchTimeoutMin: 10e9, WatchTimeoutMax: 5e9})
	require.ErrorContains(t, err, "watch timeout range")
	_, err = New(Config{QuickEndsBeforeBackoff: -3})
	require.ErrorContains(t, err, "QuickEndsBeforeBackoff")
}

package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/driver"
)

// docs/design.md "Event sourcing": nothing a decision depends on lies outside the journal. The
// wall clock's time.Now carries a monotonic reading as well, which Sub prefers and JSON does not
// keep: a machine stepped with it measured its silence deadlines on the monotonic clock, and the
// replay of its journal, reading the wall times back, computed them 10 ns apart once the wall
// clock had been slewed. So every event reaches the machine and the observers with its wall
// reading alone, the one the journal records.
func TestEventsCarryOnlyTheWallReadingTheJournalKeeps(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &burstTransport{n: 3, cancel: cancel, busy: make(chan struct{}), release: make(chan struct{})}
	close(b.busy)
	var seen []time.Time
	err := driver.Run(ctx, driver.Config{
		Transport: b, Store: driver.NewMemStore(),
		Observers: []driver.Observer{driver.ObserverFunc(func(tr driver.Transition) {
			seen = append(seen, tr.Event.Now)
		})},
	})
	require.NoError(t, err)
	require.NotEmpty(t, seen)
	for i, now := range seen {
		require.False(t, now.IsZero())
		require.True(t, now == now.Round(0), "event %d carries a monotonic reading the journal drops: %v", i, now)
	}
}

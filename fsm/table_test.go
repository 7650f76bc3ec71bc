package fsm

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The checks NewTable makes of the reflector's table when transitions loads, meeting the
// tables they exist to refuse.
func TestIndexTableRefusesBrokenTables(t *testing.T) {
	timers := []Transition{
		{From: Backoff, Cause: CauseRetryWatch, To: Watching},
		{From: Backoff, Cause: CauseRetryRelist, To: Relisting},
	}
	with := func(rows ...Transition) []Transition { return append(append([]Transition{}, timers...), rows...) }
	for _, c := range []struct {
		name  string
		table []Transition
		err   string
	}{
		{"forgotten Then", with(Transition{From: Watching, Cause: CauseServerBusy, To: Backoff}),
			"Watching --server-busy--> Backoff has no Then"},
		{"Then without a timer row", with(Transition{From: Listing, Cause: CauseListFailed, To: Backoff, Then: Listing}),
			"leads on to Listing, but Backoff has no timer row into it"},
		{"Then on a row that does not wait", with(Transition{From: Watching, Cause: CauseExpired, To: Relisting, Then: Watching}),
			"has a Then (Watching) but does not lead to Backoff"},
		{"a wait into Stopped", with(Transition{From: Watching, Cause: CauseWatchRejected, To: Backoff, Then: Stopped}),
			"a wait cannot lead to Stopped"},
		{"two timer rows into one state", with(Transition{From: Backoff, Cause: CauseRetryList, To: Watching}),
			"Backoff has two timer rows into Watching"},
		{"duplicate row", with(Transition{From: Watching, Cause: CauseStop, To: Stopped}, Transition{From: Watching, Cause: CauseStop, To: Stopped}),
			"duplicate row Watching --stop-->"},
		{"NoCause", with(Transition{From: Watching, Cause: NoCause, To: Watching}), "out of range"},
		{"a cause that begins a relist in one row only", with(Transition{From: Watching, Cause: CauseExpired, To: Relisting},
			Transition{From: Relisting, Cause: CauseExpired, To: Relisting}),
			"row Relisting --expired--> Relisting does not begin a relist, but another row of expired does"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTable(c.table, nil)
			assert.ErrorContains(t, err, c.err)
		})
	}
	_, err := NewTable(with(Transition{From: Watching, Cause: CauseServerBusy, To: Backoff, Then: Watching}), nil)
	assert.NoError(t, err)
}

package fsm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The facts a cause declares about where it leads must agree with the rows fsm.Table gives it:
// the declaration says why, the table says where, and neither may contradict the other.
func TestCauseFactsAgreeWithTheTable(t *testing.T) {
	for _, c := range Causes() {
		info := c.Info()
		var rows []Transition
		for _, row := range Table {
			if row.Cause == c {
				rows = append(rows, row)
			}
		}
		require.NotEmpty(t, rows, "cause %s has no row", c)
		for _, row := range rows {
			leadsTo := row.To
			if row.To == Backoff {
				leadsTo = row.Then
			}
			assert.Equal(t, row.From == Watching && leadsTo == Relisting, c.BeginsRelist(),
				"%s: a cause begins a relist when its rows lead from Watching to Relisting: row %+v", c, row)
			if info.AvoidsList != AvoidsNoList {
				assert.Equal(t, Watching, leadsTo, "%s avoids a LIST, so it must lead back to the watch: row %+v", c, row)
			}
			if info.Accepted {
				assert.NotEqual(t, Backoff, row.To, "%s says the server accepted a request but waits", c)
			}
		}
		if info.AvoidsList != AvoidsNoList || c.BeginsRelist() {
			assert.True(t, info.Retry, "%s is a watch failure answered by another try, so a retry", c)
		}
		if info.Retry {
			assert.False(t, info.Accepted, "%s: a retry answers a failure, not an accepted request", c)
		}
	}
}

// Renamed causes keep their old ids readable: journals written before the rename replay.
func TestCauseAliasesRead(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range Causes() {
		ids[c.String()] = true
	}
	for _, c := range Causes() {
		for _, alias := range c.Info().Aliases {
			assert.False(t, ids[alias], "alias %q of %s is another cause's id", alias, c)
			var got Cause
			require.NoError(t, got.UnmarshalText([]byte(alias)))
			assert.Equal(t, c, got, "alias %q", alias)
			b, err := got.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, c.String(), string(b), "an alias is read, never written")
		}
	}
}

func TestClassesSet(t *testing.T) {
	set := ClassesOf(ClassBusy, ClassRejected)
	assert.True(t, set.Has(ClassBusy))
	assert.True(t, set.Has(ClassRejected))
	assert.False(t, set.Has(ClassInternal))
	assert.False(t, set.Has(Class(200)))
	assert.Equal(t, []Class{ClassBusy, ClassRejected}, set.List())
}

package fsm

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The facts a cause declares must agree with the rows the table gives it: the declaration says
// why, the table says where, and neither may contradict the other. NewTable refuses facts that do.
func TestNewTableRefusesFactsTheRowsContradict(t *testing.T) {
	rows := []Transition{
		{From: Backoff, Cause: CauseRetryWatch, To: Watching},
		{From: Backoff, Cause: CauseRetryRelist, To: Relisting},
		{From: Watching, Cause: CauseExpired, To: Relisting},
		{From: Watching, Cause: CauseServerBusy, To: Backoff, Then: Watching},
		{From: Watching, Cause: CauseWatchOpened, To: Watching},
	}
	base := []CauseFacts{
		{Cause: CauseRetryWatch}, {Cause: CauseRetryRelist},
		{Cause: CauseExpired, Retry: true}, {Cause: CauseServerBusy, Retry: true, AvoidsList: AvoidsList},
		{Cause: CauseWatchOpened, Accepted: true},
	}
	with := func(change func(f []CauseFacts) []CauseFacts) []CauseFacts {
		return change(append([]CauseFacts{}, base...))
	}
	for _, c := range []struct {
		name  string
		facts []CauseFacts
		err   string
	}{
		{"a cause that avoids a LIST but relists", with(func(f []CauseFacts) []CauseFacts {
			f[2].AvoidsList = AvoidsList
			return f
		}), "expired avoids a LIST, so it must lead back to the watch"},
		{"an accepted request that waits", with(func(f []CauseFacts) []CauseFacts {
			f[3] = CauseFacts{Cause: CauseServerBusy, Accepted: true}
			return f
		}), "server-busy says the server accepted a request but waits"},
		{"a relist that is no retry", with(func(f []CauseFacts) []CauseFacts {
			f[2].Retry = false
			return f
		}), "expired is a watch failure answered by another try, so a retry"},
		{"a retry that was accepted", with(func(f []CauseFacts) []CauseFacts {
			f[4].Retry = true
			return f
		}), "watch-opened: a retry answers a failure, not an accepted request"},
		{"a cause declared twice", with(func(f []CauseFacts) []CauseFacts {
			return append(f, CauseFacts{Cause: CauseExpired, Retry: true})
		}), "cause expired is declared twice"},
		{"a cause without rows", with(func(f []CauseFacts) []CauseFacts {
			return append(f, CauseFacts{Cause: CauseListItem})
		}), "cause list-item has no row"},
		{"a cause not declared", base, "cause start is not declared"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTable(rows, c.facts)
			assert.ErrorContains(t, err, c.err)
		})
	}
}

// NewTable holds Listing and Relisting to ListingAndRelisting: the same rows but the start's,
// which only Listing takes, each one's waits coming back to itself.
func TestNewTableHoldsListingAndRelistingAlike(t *testing.T) {
	rows := []Transition{
		{From: Backoff, Cause: CauseRetryList, To: Listing},
		{From: Backoff, Cause: CauseRetryRelist, To: Relisting},
		{From: Listing, Cause: CauseStart, To: Listing},
		{From: Listing, Cause: CauseListFailed, To: Backoff, Then: Listing},
		{From: Relisting, Cause: CauseListFailed, To: Backoff, Then: Relisting},
		{From: Listing, Cause: CauseListComplete, To: Watching},
		{From: Relisting, Cause: CauseListComplete, To: Watching},
	}
	facts := func(rows []Transition, start ...Cause) []CauseFacts {
		var out []CauseFacts
		seen := map[Cause]bool{}
		for _, r := range rows {
			if !seen[r.Cause] {
				seen[r.Cause] = true
				out = append(out, CauseFacts{Cause: r.Cause, Start: slices.Contains(start, r.Cause), Retry: r.Cause == CauseListFailed})
			}
		}
		for c := NoCause + 1; c < numCauses; c++ {
			if !seen[c] {
				out = append(out, CauseFacts{Cause: c})
			}
		}
		return out
	}
	check := func(rows []Transition, start ...Cause) error {
		_, err := NewTable(rows, facts(rows, start...))
		return err
	}
	// Every other cause lacks rows here: only the listing states' errors matter.
	listingErrors := func(err error) []string {
		var out []string
		if err == nil {
			return nil
		}
		for _, l := range strings.Split(err.Error(), "\n") {
			if strings.Contains(l, ListingAndRelisting) {
				out = append(out, strings.TrimSpace(strings.TrimPrefix(l, "fsm: bad transition table: ")))
			}
		}
		return out
	}
	assert.Empty(t, listingErrors(check(rows, CauseStart)))
	assert.Equal(t, []string{"start is not the start's, yet only one of Listing and Relisting takes it: " + ListingAndRelisting},
		listingErrors(check(rows)))
	assert.Equal(t, []string{"start is the start's, yet Relisting takes it: " + ListingAndRelisting},
		listingErrors(check(append(slices.Clone(rows), Transition{From: Relisting, Cause: CauseStart, To: Relisting}), CauseStart)))
	skewed := slices.Clone(rows)
	skewed[6] = Transition{From: Relisting, Cause: CauseListComplete, To: Relisting}
	assert.Equal(t, []string{"list-complete leads Listing to Watching and Relisting to Relisting: " + ListingAndRelisting},
		listingErrors(check(skewed, CauseStart)))
	crossed := slices.Clone(rows)
	crossed[4] = Transition{From: Relisting, Cause: CauseListFailed, To: Backoff, Then: Watching}
	crossed = append(crossed, Transition{From: Backoff, Cause: CauseRetryWatch, To: Watching})
	assert.Equal(t, []string{"list-failed leads Listing to Backoff and Relisting to Backoff: " + ListingAndRelisting},
		listingErrors(check(crossed, CauseStart)))
}

// Renamed causes keep their old ids readable: journals written before the rename replay.
func TestCauseAliasesRead(t *testing.T) {
	ids := map[string]bool{}
	for _, c := range Causes() {
		ids[c.String()] = true
	}
	for _, c := range Causes() {
		for _, alias := range causeIDs[c].Aliases {
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

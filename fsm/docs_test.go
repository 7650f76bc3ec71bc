package fsm

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The statements of the design that the code holds (fsm.ListingAndRelisting, which NewTable
// checks) are written once, in the code; docs/design.md quotes them word for word, and this
// fails when it no longer does.
func TestDesignQuotesWhatTheTableHolds(t *testing.T) {
	b, err := os.ReadFile("../docs/design.md")
	require.NoError(t, err)
	design := strings.Join(strings.Fields(string(b)), " ")
	for _, statement := range []string{ListingAndRelisting} {
		require.Contains(t, design, `"`+statement+`"`, "docs/design.md no longer quotes what the table holds")
	}
}

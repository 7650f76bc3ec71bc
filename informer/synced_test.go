package informer

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"
)

// syncBound is how long a test waits for a sync that comes within milliseconds when nothing is
// wrong: long enough for a loaded machine, short enough that a sync that never comes fails
// its own test rather than hanging the whole package until go test's timeout.
const syncBound = time.Minute

// SyncedWithin waits for every one of synced, for syncBound at most (exported for this
// package's external tests).
func SyncedWithin(t testing.TB, synced ...cache.InformerSynced) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), syncBound)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), synced...), "not synced within %s", syncBound)
}

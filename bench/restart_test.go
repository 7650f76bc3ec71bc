package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch"
)

// The short version of the restart benchmark (rewatch-bench restart): a controller restarted
// after a few seconds down, and after kube-apiserver restarted meanwhile (its history begins
// after the controller's resourceVersion), rewatch's factory with a persisted cache beside
// client-go's. The 300 objects fit a page, so rewatch's probe holds the whole collection and is
// the state at once, decoding only the changed items, whether or not the history is there (a
// collection larger than a page resumes through the watch: e2e/controllers'
// TestControllerRestartResumesFromItsPersistedCache); client-go's transfers the whole state
// each time; every cache is the server's state the moment it reports HasSynced.
func TestRestartShort(t *testing.T) {
	ctx, self := serverBenchmark(t, "starts a kube-apiserver and a controller process per start")
	const objects, changed = 300, 10
	rs, err := RunRestart(ctx, RestartOptions{Objects: objects, Down: 2 * time.Second, Changed: changed,
		Scenarios: RestartScenarios, Variants: []string{VariantRewatch, VariantClientGo}, CacheDir: t.TempDir(), Self: self, Logf: t.Logf})
	require.NoError(t, err)
	var sb testWriter
	WriteRestartTable(&sb, rs)
	t.Log("\n" + string(sb))
	for _, r := range rs {
		require.Empty(t, r.Err, "%s %s", r.Scenario, r.Variant)
		require.True(t, r.Restart.EqualAtSync, "%s %s: the cache at HasSynced was not the server's state", r.Scenario, r.Variant)
		switch {
		case r.Variant == VariantClientGo:
			require.Equal(t, 1, r.Restart.FullStateTransfers, "%s: client-go's restart", r.Scenario)
		default:
			require.Equal(t, 1, r.Restart.FullStateTransfers, "%s: rewatch's probe, the whole collection", r.Scenario)
			st := r.Restart.Start
			require.Equal(t, rewatch.StartProbedWhole, st.Way, "%s", st)
			require.Equal(t, objects, st.Listed)
			require.LessOrEqual(t, st.Decoded, changed, "the probe decoded items the snapshot held unchanged: %s", st)
		}
	}
}

// The short version of the fleet rollout (rewatch-bench fleet -scenarios rollout): every member
// of a fleet restarted one after another while a writer runs. rewatch's members resume from
// their persisted caches — at most a tenth of them transfer the full state — where each of
// client-go's lists it; every store ends with the server's state. The 600 objects are more than
// a LIST's page (500), so a restart resumes through the watch rather than take its probe's page,
// the whole collection, as its state.
func TestFleetRolloutShort(t *testing.T) {
	ctx, self := serverBenchmark(t, "starts a kube-apiserver and a fleet of processes per run")
	runRolloutShort(t, ctx, self, VariantRewatch, VariantClientGo, func(t *testing.T, r FleetResult) {
		require.Positive(t, r.Rollout.Probes, "rewatch's members resumed from their snapshots")
	})
}

// The short version of the rollout through one bucket (rewatch-bench fleet -scenarios rollout
// -variants rewatch-bucket,rewatch-emptydir): every member a new pod with no local cache. Those
// sharing a bucket (SeaweedFS) resume from it — at most a tenth transfer the full state — and
// read their snapshots from the bucket, not from kube-apiserver; those with an emptyDir alone
// list, each of them. 600 objects: more than a page, so that a restart resumes rather than
// taking the probe's page as the state. Every store ends with the server's state.
func TestFleetRolloutThroughABucketShort(t *testing.T) {
	ctx, self := serverBenchmark(t, "starts a kube-apiserver, SeaweedFS and a fleet of processes per run")
	runRolloutShort(t, ctx, self, VariantRewatchBucket, VariantRewatchEmptyDir, func(t *testing.T, r FleetResult) {
		require.Positive(t, r.Rollout.ObjectStore.BytesRead, "the snapshots came from the bucket")
	})
}

// runRolloutShort rolls out a fleet of ten members over 600 objects (more than a page, so that
// a restart resumes rather than taking the probe's page as the state) in two variants: resuming,
// whose rollout transfers the full state at most once a tenth of the members (and meets
// resumed's own check), and listing, whose every member lists. Every member syncs after its
// restart and every store ends with the server's state.
func runRolloutShort(t *testing.T, ctx context.Context, self, resuming, listing string, resumed func(*testing.T, FleetResult)) {
	const n = 10
	rs, err := RunFleet(ctx, FleetOptions{Sizes: []int{n}, Objects: 600, Scenarios: []string{ScenarioRollout},
		Variants: []string{resuming, listing}, WriteEvery: 50 * time.Millisecond, MatchTimeout: 2 * time.Minute, Self: self, Logf: t.Logf})
	require.NoError(t, err)
	var sb testWriter
	WriteRolloutTable(&sb, rs)
	t.Log("\n" + string(sb))
	for _, r := range rs {
		require.Empty(t, r.Err, r.Variant)
		require.NotNil(t, r.Rollout, r.Variant)
		require.Zero(t, r.Rollout.Unsynced, "%s: members that did not sync after their restart", r.Variant)
		require.GreaterOrEqual(t, r.ConvergeSeconds, 0.0, "%s: every store holds the server's state at the end", r.Variant)
		if r.Variant == resuming {
			require.LessOrEqual(t, r.Rollout.FullStateTransfers, n/10, "%s's rollout", r.Variant)
			resumed(t, r)
		} else {
			require.GreaterOrEqual(t, r.Rollout.FullStateTransfers, n, "%s lists once per member", r.Variant)
		}
	}
}

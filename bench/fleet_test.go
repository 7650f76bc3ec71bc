package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/backoff"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/journal"
)

// The fleet and restart benchmarks re-execute their binary as the fleet's or the controller's
// process; in a test binary that is this TestMain, which then runs the child instead of the
// tests.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fleet-child" {
		fs := flag.NewFlagSet("fleet-child", flag.ExitOnError)
		v, server, n, journal := fs.String("variant", "", ""), fs.String("server", "", ""), fs.Int("n", 0, ""), fs.String("journal", "", "")
		cacheDir, cacheURL, keyFile := fs.String("cache-dir", "", ""), fs.String("cache-url", "", ""), fs.String("cache-key-file", "", "")
		_ = fs.Parse(os.Args[2:])
		if err := FleetChild(FleetChildOptions{Variant: *v, Server: *server, N: *n, Journal: *journal, CacheDir: *cacheDir,
			CacheURL: *cacheURL, CacheKeyFile: *keyFile}, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == "restart-child" {
		var o RestartChildOptions
		fs := flag.NewFlagSet("restart-child", flag.ExitOnError)
		fs.StringVar(&o.Variant, "variant", "", "")
		fs.StringVar(&o.Server, "server", "", "")
		fs.StringVar(&o.CacheDir, "cache-dir", "", "")
		fs.StringVar(&o.CacheURL, "cache-url", "", "")
		fs.StringVar(&o.CacheKeyFile, "cache-key-file", "", "")
		fs.IntVar(&o.WantCount, "want-count", 0, "")
		fs.Uint64Var(&o.WantHash, "want-hash", 0, "")
		_ = fs.Parse(os.Args[2:])
		if err := RestartChild(o, os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serverBenchmark begins a short benchmark on the real kube-apiserver: skipped unless opted in
// (why says what it starts), failing under CI when the server cannot be built, given ten minutes,
// and with the test binary itself as the program its children run.
func serverBenchmark(t *testing.T, why string) (context.Context, string) {
	t.Helper()
	apiserver.SkipUnlessOptedIn(t, why)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		testbackend.Unavailable(t, err)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	return ctx, self
}

// The short version of the fleet benchmark (rewatch-bench fleet): three reflectors of each
// kind on a real kube-apiserver through a restart and a compaction the server makes itself.
// rewatch's fleet moves no more full state than client-go's and gets back in sync, and no
// member of any fleet hot-loops.
func TestFleetShort(t *testing.T) {
	ctx, self := serverBenchmark(t, "starts a kube-apiserver and a fleet of processes per run")
	rs, err := RunFleet(ctx, FleetOptions{Sizes: []int{3}, Objects: 300, Scenarios: []string{ScenarioRestart, ScenarioCompaction},
		Variants: []string{VariantRewatch, VariantClientGo}, WriteEvery: 50 * time.Millisecond, Gap: 3 * time.Second,
		Inflight: 10, Self: self, Logf: t.Logf})
	require.NoError(t, err)
	var sb testWriter
	WriteFleetTable(&sb, rs)
	t.Log("\n" + string(sb))
	by := map[string]FleetResult{}
	for _, r := range rs {
		require.Empty(t, r.Err, "%s %s", r.Scenario, r.Variant)
		require.GreaterOrEqual(t, r.ConvergeSeconds, 0.0)
		// A member that kept failing without waiting would make hundreds of requests a minute.
		require.Less(t, r.MaxRequestsPerReflectorPerMinute, 60, "%s %s: a member hot-looped", r.Scenario, r.Variant)
		by[r.Scenario+"/"+r.Variant] = r
	}
	for _, sc := range []string{ScenarioRestart, ScenarioCompaction} {
		rw, cg := by[sc+"/"+VariantRewatch], by[sc+"/"+VariantClientGo]
		require.LessOrEqual(t, rw.FullStateTransfers, cg.FullStateTransfers, "%s: rewatch's fleet moved more full state", sc)
	}
}

// The short version of apf-restart (rewatch-bench fleet -scenarios apf-restart): three rewatch
// reflectors behind a reject-only priority level of the real kube-apiserver, restarted under
// them while the writer writes (client-go's fleet is the benchmark's to run beside it: here it
// would double the time), once with the defaults and once told the server is one kube-apiserver
// (Policy.SingleServer). Every store holds every object, is back on the new server, and ends
// with the server's state; no member hot-loops; no rewatch member's journal records a wait
// after the new server's first refusal (of a watch, or of a relist's LIST) longer than the
// backoff's first step allows (docs/semantics.md, "watch refused"); the restarted server's
// young watch cache answers every member of the defaults' fleet 410, which it re-watches on a
// fresh connection (docs/semantics.md, "behind a load balancer"); and SingleServer members
// read the front's 502 while the server is down as the one server unreachable and relist
// without meeting a 410, or, where their waits stepped over the restart, are answered 410
// and relist without that re-watch (docs/semantics.md, "One kube-apiserver"). The times are
// the benchmark's, not asserted here.
func TestAPFRestartShort(t *testing.T) {
	ctx, self := serverBenchmark(t, "starts a kube-apiserver and a fleet of processes per run")
	dir := t.TempDir()
	variants := []string{VariantRewatch, VariantRewatchSingle}
	rs, err := RunFleet(ctx, FleetOptions{Sizes: []int{3}, Objects: 300, Scenarios: []string{ScenarioAPFRestart},
		Variants: variants, WriteEvery: 50 * time.Millisecond, RestartAfter: 6 * time.Second,
		Window: 6 * time.Second, JournalDir: dir, Self: self, Logf: t.Logf})
	require.NoError(t, err)
	var sb testWriter
	WriteAPFRestartTable(&sb, rs)
	t.Log("\n" + string(sb))
	require.Len(t, rs, len(variants))
	for _, r := range rs {
		require.Empty(t, r.Err, r.Variant)
		require.Len(t, r.MemberConvergeSeconds, 3, r.Variant)
		require.NotEmpty(t, r.ClientRequests, r.Variant)
		require.Less(t, r.MaxRequestsPerReflectorPerMinute, 60, "%s: a member hot-looped", r.Variant)
	}
	firstStep := backoff.Reflector()
	for _, r := range rs {
		youngCacheRewatches, unreachable := 0, 0
		for i := range 3 {
			listRefused := false
			causes := journalCauses(t, fmt.Sprintf(r.Journal, i), func(rec journal.Record) {
				first := rec.Cause == fsm.CauseWatchRejectedOnce || rec.Cause == fsm.CauseListRejected && !listRefused
				listRefused = listRefused || rec.Cause == fsm.CauseListRejected
				if !first {
					return
				}
				for _, c := range rec.Commands {
					if c.Kind == fsm.CmdArmTimer {
						require.Less(t, c.Delay, 2*firstStep.Duration, "%s member %d waited past the backoff's first step after a refusal", r.Variant, i)
					}
				}
			})
			answered410 := causes[fsm.CauseExpired] + causes[fsm.CauseExpiredAgain] + causes[fsm.CauseExpiredYoungCache] + causes[fsm.CauseListExpired]
			youngCacheRewatches += causes[fsm.CauseExpiredYoungCache]
			switch {
			case r.Variant == VariantRewatch:
				require.Zero(t, causes[fsm.CauseServerUnreachable], "%s member %d read the front's 502 as one server down", r.Variant, i)
				require.Positive(t, answered410, "%s member %d: the restarted server's watch cache never answered 410", r.Variant, i)
			case causes[fsm.CauseServerUnreachable] > 0:
				// docs/semantics.md, "One kube-apiserver": the front's 502 while the server was
				// down led to a relist at the last RV, so no resume met the new watch cache.
				unreachable++
				require.Zero(t, answered410, "%s member %d resumed from the restarted server after reading it unreachable", r.Variant, i)
			default:
				// A member whose waits stepped over the restart resumes, and is answered 410.
				require.Positive(t, answered410, "%s member %d: neither unreachable nor answered 410", r.Variant, i)
				require.Zero(t, causes[fsm.CauseExpiredYoungCache], "%s member %d re-watched a young cache on a fresh connection", r.Variant, i)
			}
		}
		if r.Variant == VariantRewatch {
			require.Positive(t, youngCacheRewatches, "%s: no member read the restarted server's 410 as a young watch cache's", r.Variant)
		} else {
			require.Positive(t, unreachable, "%s: no member read the front's 502 as the one server down", r.Variant)
		}
	}
}

// journalCauses reads the journal at path, calls each on every record, and counts its causes.
func journalCauses(t *testing.T, path string, each func(journal.Record)) map[fsm.Cause]int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	jr, err := journal.NewReader(f)
	require.NoError(t, err, path)
	causes := map[fsm.Cause]int{}
	records := 0
	for {
		rec, err := jr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, path)
		records++
		causes[rec.Cause]++
		each(rec)
	}
	require.Positive(t, records, "%s: no journal kept", path)
	return causes
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

// A fleet that cannot reach its state within the time it is given says how many of its stores
// are behind, rather than blocking or answering as if it had matched.
func TestFleetChildReportsStoresBehindOnTimeout(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	// Nothing listens on the server's address: no member can ever list.
	go func() {
		done <- FleetChild(FleetChildOptions{Variant: VariantRewatch, Server: "http://127.0.0.1:1", N: 3}, inR, outW)
	}()
	lines := bufio.NewScanner(outR)

	_, err := fmt.Fprintf(inW, "match 1 %d 50\n", stateHash(map[string]string{"fleet/a": "1"}))
	require.NoError(t, err)
	require.True(t, lines.Scan())
	require.Equal(t, "MATCHED timeout 3 3", lines.Text())

	_, err = fmt.Fprintln(inW, "report")
	require.NoError(t, err)
	require.True(t, lines.Scan())
	var r fleetChildResult
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(lines.Text(), "RESULT ")), &r))
	require.Positive(t, r.MaxRSSKiB)

	require.NoError(t, inW.Close())
	require.NoError(t, <-done)
}

// A run whose fleet did not get in sync keeps its figures in the table, with the stage that
// ran out saying how many stores were behind.
func TestFleetTableShowsUnsyncedRuns(t *testing.T) {
	rs := []FleetResult{
		{Scenario: ScenarioAPF, Variant: VariantRewatch, Reflectors: 200, TooMany: 5000, InitialSyncSeconds: -1, ConvergeSeconds: -1,
			Unsynced: 17, MatchTimeoutSeconds: 600, Err: "initial sync: 17 of 200 stores did not hold the server's state within 10m0s"},
		{Scenario: ScenarioRestart, Variant: VariantRewatch, Reflectors: 50, InitialSyncSeconds: 9.4, ConvergeSeconds: -1,
			Unsynced: 2, MatchTimeoutSeconds: 600, Err: "converge: 2 of 50 stores did not hold the server's state within 10m0s"},
		{Scenario: ScenarioSlow, Variant: VariantClientGo, Reflectors: 50, Err: "slow: etcd would not stop"},
	}
	var sb testWriter
	WriteFleetTable(&sb, rs)
	rows := strings.Split(strings.TrimSpace(string(sb)), "\n")[2:]
	require.Len(t, rows, 3)
	require.Contains(t, rows[0], "| 5000 |")
	require.Contains(t, rows[0], "| > 600 (17 of 200 not in sync) | — |")
	require.Contains(t, rows[1], "| 9.4 | > 600 (2 of 50 not in sync) |")
	require.Equal(t, "| slow | 50 | client-go | error: slow: etcd would not stop |", rows[2])
}

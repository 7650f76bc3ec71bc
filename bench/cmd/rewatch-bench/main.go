// Command rewatch-bench runs the heavy benchmarks against the real kube-apiserver:
// the transient storm (storm), initial sync (sync, or -server sim for the simulator), fleets
// (fleet) and a controller's restart beside client-go's (restart); it
// also prints saved runs (report, summary) and draws the charts (charts). scripts/bench.sh
// runs it with the go test benchmarks; the results are in bench/RESULTS.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/rewatch/rewatch/bench"
)

func main() {
	log.SetFlags(log.Ltime)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rewatch-bench storm|sync|fleet|restart|report|summary|charts [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cmd, args := os.Args[1], os.Args[2:]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var err error
	switch cmd {
	case "storm":
		n := fs.Int("objects", 5000, "configmaps")
		scale := fs.Float64("scale", 1, "fraction of the storm's fault schedule (410s stay 2)")
		seed := fs.Uint64("seed", 6, "schedule seed")
		every := fs.Duration("write-every", 20*time.Millisecond, "writer interval")
		variants := fs.String("variants", strings.Join(bench.Variants, ","), "reflectors")
		out := fs.String("out", ".cache/bench", "directory for the raw JSON results (not tracked)")
		maxDur := fs.Duration("max-duration", 90*time.Minute, "give up waiting for a reflector to consume the schedule after this")
		_ = fs.Parse(args)
		self, _ := os.Executable()
		stamp := time.Now().Format("20060102-150405")
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
		journal, _ := filepath.Abs(filepath.Join(*out, "storm-"+stamp+"-rewatch.journal"))
		m := bench.StormMix
		sc := func(x int) int { return max(1, int(float64(x)**scale+0.5)) }
		m = bench.Mix{Open429: sc(m.Open429), Event429: sc(m.Event429), EventIE: sc(m.EventIE), EventReset: sc(m.EventReset), Event410: m.Event410}
		var r *bench.StormResult
		r, err = bench.RunStorm(ctx, bench.StormOptions{Objects: *n, Mix: m, Seed: *seed, Variants: strings.Split(*variants, ","),
			WriteEvery: *every, Self: self, Journal: journal, MaxDuration: *maxDur, Logf: log.Printf})
		if err == nil {
			bench.WriteStormTable(os.Stdout, r)
			err = saveAs(filepath.Join(*out, "storm-"+stamp+".json"), r)
		}
	case "storm-child":
		v := fs.String("variant", "", "")
		server := fs.String("server", "", "")
		ns := fs.String("ns", "", "")
		n := fs.Int("n", 0, "")
		journal := fs.String("journal", "", "")
		_ = fs.Parse(args)
		err = bench.StormChild(*v, *server, *ns, *n, *journal, os.Stdin, os.Stdout)
	case "sync":
		sizes := fs.String("sizes", "10000,50000", "object counts")
		reps := fs.Int("repeat", 3, "repetitions per case")
		server := fs.String("server", "real", "real (kube-apiserver through the fault proxy) or sim (in-process simulator)")
		out := fs.String("out", ".cache/bench", "directory for the raw JSON results (not tracked)")
		_ = fs.Parse(args)
		self, _ := os.Executable()
		ns := parseSizes(*sizes)
		var r []bench.SyncResult
		r, err = bench.RunSync(ctx, bench.SyncOptions{Sizes: ns, Repeats: *reps, Server: *server, Self: self, Logf: log.Printf})
		if err == nil {
			bench.WriteSyncTable(os.Stdout, r)
			err = save(*out, "sync", r)
		}
	case "sync-child":
		v := fs.String("variant", "", "")
		server := fs.String("server", "", "")
		n := fs.Int("n", 0, "")
		wl := fs.Bool("watchlist", false, "")
		_ = fs.Parse(args)
		err = bench.SyncChild(*v, *server, *n, *wl, os.Stdout)
	case "fleet":
		sizes := fs.String("sizes", "50,200", "reflectors per fleet, comma-separated")
		objects := fs.Int("objects", 5000, "configmaps on the server")
		scenarios := fs.String("scenarios", strings.Join(bench.FleetScenarios, ","), "scenarios: apf, restart, compaction, slow, ha, rollout")
		variants := fs.String("variants", strings.Join(bench.FleetVariants, ","), "reflector kinds")
		every := fs.Duration("write-every", 50*time.Millisecond, "writer interval")
		gap := fs.Duration("gap", 60*time.Second, "time between the two restarts (restart), between kube-apiservers in the rolling restart (ha); etcd is paused for a third of it (slow)")
		inflight := fs.Int("inflight", 10, "--max-requests-inflight in the apf scenarios (apf-restart: 0, the server's default, unless given)")
		restartAfter := fs.Duration("restart-after", 30*time.Second, "apf-restart: when kube-apiserver is restarted, from the fleet's start")
		window := fs.Duration("window", 30*time.Second, "apf-restart: how long after the restart the requests are counted")
		matchTimeout := fs.Duration("match-timeout", 10*time.Minute, "how long a fleet may take to hold the server's state; one that does not still reports its figures")
		out := fs.String("out", ".cache/bench", "directory for the raw JSON results (not tracked)")
		charts := fs.String("charts", "", "directory for the SVG charts (none if empty)")
		_ = fs.Parse(args)
		inflightGiven := false
		fs.Visit(func(f *flag.Flag) { inflightGiven = inflightGiven || f.Name == "inflight" })
		if !inflightGiven && *scenarios == bench.ScenarioAPFRestart {
			*inflight = 0 // the server's own concurrency, as the set-up it reproduces
		}
		self, _ := os.Executable()
		ns := parseSizes(*sizes)
		if err := os.MkdirAll(*out, 0o755); err != nil {
			log.Fatal(err)
		}
		partial, perr := os.Create(filepath.Join(*out, "fleet-"+time.Now().Format("20060102-150405")+".jsonl"))
		if perr != nil {
			log.Fatal(perr)
		}
		defer partial.Close()
		onResult := func(r bench.FleetResult) {
			b, _ := json.Marshal(r)
			fmt.Fprintf(partial, "%s\n", b)
			bench.WriteFleetTable(os.Stderr, []bench.FleetResult{r})
			bench.WriteAPFRestartTable(os.Stderr, []bench.FleetResult{r})
		}
		var r []bench.FleetResult
		r, err = bench.RunFleet(ctx, bench.FleetOptions{OnResult: onResult, Sizes: ns, Objects: *objects, Scenarios: strings.Split(*scenarios, ","),
			Variants: strings.Split(*variants, ","), WriteEvery: *every, Gap: *gap, Inflight: *inflight, MatchTimeout: *matchTimeout, Self: self, Logf: log.Printf,
			JournalDir: *out, RestartAfter: *restartAfter, Window: *window})
		bench.WriteFleetTable(os.Stdout, r)
		bench.WriteRolloutTable(os.Stdout, r)
		bench.WriteAPFRestartTable(os.Stdout, r)
		if serr := save(*out, "fleet", r); err == nil {
			err = serr
		}
		if err == nil && *charts != "" {
			err = bench.FleetCharts(r, *charts)
		}
	case "fleet-child":
		v := fs.String("variant", "", "")
		server := fs.String("server", "", "")
		n := fs.Int("n", 0, "")
		journal := fs.String("journal", "", "")
		cacheDir := fs.String("cache-dir", "", "")
		cacheURL := fs.String("cache-url", "", "")
		keyFile := fs.String("cache-key-file", "", "")
		_ = fs.Parse(args)
		err = bench.FleetChild(bench.FleetChildOptions{Variant: *v, Server: *server, N: *n, Journal: *journal, CacheDir: *cacheDir,
			CacheURL: *cacheURL, CacheKeyFile: *keyFile}, os.Stdin, os.Stdout)
	case "restart":
		objects := fs.Int("objects", 20000, "configmaps on the server")
		down := fs.Duration("down", 30*time.Second, "how long the controller is down")
		changed := fs.Int("changed", 0, "objects changed while it is down (default 1% of -objects, at least 3)")
		scenarios := fs.String("scenarios", strings.Join(bench.RestartScenarios, ","), "scenarios: down, expired")
		variants := fs.String("variants", strings.Join(bench.RestartVariants, ","), "controllers")
		out := fs.String("out", ".cache/bench", "directory for the raw JSON results and the snapshots (not tracked)")
		_ = fs.Parse(args)
		self, _ := os.Executable()
		if *changed == 0 {
			*changed = max(3, *objects/100)
		}
		cacheDir, _ := filepath.Abs(filepath.Join(*out, "restart-cache-"+time.Now().Format("20060102-150405")))
		var r []bench.RestartResult
		r, err = bench.RunRestart(ctx, bench.RestartOptions{Objects: *objects, Down: *down, Changed: *changed,
			Scenarios: strings.Split(*scenarios, ","), Variants: strings.Split(*variants, ","), CacheDir: cacheDir, Self: self, Logf: log.Printf,
			OnResult: func(r bench.RestartResult) { bench.WriteRestartTable(os.Stderr, []bench.RestartResult{r}) }})
		bench.WriteRestartTable(os.Stdout, r)
		if serr := save(*out, "restart", r); err == nil {
			err = serr
		}
	case "restart-child":
		var o bench.RestartChildOptions
		fs.StringVar(&o.Variant, "variant", "", "")
		fs.StringVar(&o.Server, "server", "", "")
		fs.StringVar(&o.CacheDir, "cache-dir", "", "")
		fs.StringVar(&o.CacheURL, "cache-url", "", "")
		fs.StringVar(&o.CacheKeyFile, "cache-key-file", "", "")
		fs.IntVar(&o.WantCount, "want-count", 0, "")
		fs.Uint64Var(&o.WantHash, "want-hash", 0, "")
		_ = fs.Parse(args)
		err = bench.RestartChild(o, os.Stdin, os.Stdout)
	case "report":
		_ = fs.Parse(args)
		var runs []*bench.StormResult
		if runs, err = loadStorms(fs.Args()[:1]); err == nil {
			bench.WriteStormTable(os.Stdout, runs[0])
		}
	case "summary":
		_ = fs.Parse(args)
		var runs []*bench.StormResult
		if runs, err = loadStorms(fs.Args()); err == nil {
			bench.WriteStormSummary(os.Stdout, runs)
		}
	case "charts":
		storm := fs.String("storm", "", "storm JSON results, comma-separated")
		tput := fs.String("throughput", "", "go test -bench output with the Throughput benchmarks")
		fleet := fs.String("fleet", "", "fleet JSON results (.json or the .jsonl written as runs end), comma-separated")
		dir := fs.String("dir", "bench", "output directory")
		_ = fs.Parse(args)
		if *storm != "" {
			var runs []*bench.StormResult
			if runs, err = loadStorms(strings.Split(*storm, ",")); err == nil {
				err = bench.StormCharts(runs, *dir)
			}
		}
		if *fleet != "" && err == nil {
			var rs []bench.FleetResult
			if rs, err = loadFleets(strings.Split(*fleet, ",")); err == nil {
				err = bench.FleetCharts(rs, *dir)
			}
		}
		if *tput != "" && err == nil {
			var f *os.File
			if f, err = os.Open(*tput); err == nil {
				_, err = bench.ThroughputChart(f, filepath.Join(*dir, "throughput.svg"))
				f.Close()
			}
		}
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		// Not through log: a child sets slog's default handler, which then takes log's lines.
		fmt.Fprintln(os.Stderr, "rewatch-bench:", err)
		os.Exit(1)
	}
}

// parseSizes reads a comma-separated list of counts.
func parseSizes(list string) []int {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			log.Fatalf("%q is not a count", f)
		}
		ns = append(ns, n)
	}
	return ns
}

func save(dir, name string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return saveAs(filepath.Join(dir, fmt.Sprintf("%s-%s.json", name, time.Now().Format("20060102-150405"))), v)
}

func saveAs(p string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	log.Printf("wrote %s", p)
	return os.WriteFile(p, b, 0o644)
}

// loadFleets reads saved fleet runs: the JSON array a fleet command writes at its end, or the
// JSON lines it appends as each run ends.
func loadFleets(files []string) ([]bench.FleetResult, error) {
	var out []bench.FleetResult
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(f, ".jsonl") {
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var r bench.FleetResult
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
				out = append(out, r)
			}
			continue
		}
		var rs []bench.FleetResult
		if err := json.Unmarshal(b, &rs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// loadStorms reads saved storm runs and recomputes what is derived from their raw timings
// (recovery and wait per fault), so that older runs are reported with today's definitions.
func loadStorms(files []string) ([]*bench.StormResult, error) {
	var runs []*bench.StormResult
	for _, f := range files {
		var r bench.StormResult
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for i := range r.Variants {
			r.Variants[i].Recover()
		}
		runs = append(runs, &r)
	}
	return runs, nil
}

package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
)

// ScenarioAPFRestart is a small fleet behind a reject-only priority level on a kube-apiserver
// with its default concurrency, restarted while a writer keeps writing: the set-up in which a
// fleet of 20 `rewatch watch` processes was measured against client-go's plain Reflector. The
// fleet's user gets a priority level of nominalConcurrencyShares 1 (about three seats of the
// server's 600, and whatever it borrows from the levels that lend) that queues nothing; a
// writer updates one ConfigMap every WriteEvery throughout; kube-apiserver is restarted
// RestartAfter after the fleet started. Figures: the time until every store held every
// object (InitialSyncSeconds), the time from the restart until every store held an object
// created once the new server answered (ConvergeSeconds), and every member's requests by verb
// and code up to RestartAfter + Window (ClientRequests). Run it with -scenarios.
const ScenarioAPFRestart = "apf-restart"

// apfRestartMarker is the object created once the restarted server answers: a store holds it
// only once its reflector is back on the new server's watch.
const apfRestartMarker = "restart-marker"

func apfRestartOnce(ctx context.Context, o FleetOptions, n int, variant string) (FleetResult, error) {
	timeout := o.MatchTimeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	restartAfter, window := o.RestartAfter, o.Window
	if restartAfter == 0 {
		restartAfter = 30 * time.Second
	}
	if window == 0 {
		window = 30 * time.Second
	}
	res := FleetResult{Scenario: ScenarioAPFRestart, Variant: variant, Reflectors: n, Objects: o.Objects, InitialSyncSeconds: -1,
		ConvergeSeconds: -1, MatchTimeoutSeconds: timeout.Seconds()}
	var extra []string
	if o.Inflight > 0 {
		extra = []string{fmt.Sprintf("--max-requests-inflight=%d", o.Inflight)}
	}
	s, cs, err := startServer(ctx, fleetNS, apiserver.Options{ExtraArgs: extra})
	if err != nil {
		return res, err
	}
	defer s.Stop()
	if err := populate(ctx, cs, fleetNS, 0, o.Objects); err != nil {
		return res, err
	}
	if err := throttleFleet(ctx, cs, true); err != nil {
		return res, err
	}
	limited, err := rest.TransportFor(s.LimitedRESTConfig())
	if err != nil {
		return res, err
	}
	front, err := faultproxy.New(faultproxy.Config{Upstream: s.URL(), Transport: limited})
	if err != nil {
		return res, err
	}
	defer front.Close()
	admin, err := s.HTTPClient()
	if err != nil {
		return res, err
	}
	acc := newServerTotals(s)
	if err := acc.begin(ctx, admin); err != nil {
		return res, err
	}

	args := []string{"fleet-child", "-variant", variant, "-server", front.URL(), "-n", strconv.Itoa(n)}
	stamp := time.Now().Format("150405")
	base := ""
	if o.JournalDir != "" {
		base = filepath.Join(o.JournalDir, fmt.Sprintf("fleet-%s-%d-%s-%s", ScenarioAPFRestart, n, variant, stamp))
		if isRewatch(variant) {
			// Every member's journal: the spread between members is what is measured.
			res.Journal = base + "-m%02d.journal"
			args = append(args, "-journal", res.Journal)
		}
	}
	cmd := variantCommand(ctx, variant, o.Self, args...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	writeCtx, stopWriting := context.WithCancel(ctx)
	written := make(chan struct{})
	stopWriter := func() { stopWriting(); <-written }
	fleetStart := time.Now()
	if err := cmd.Start(); err != nil {
		stopWriting()
		return res, err
	}
	defer endChild(cmd, stdin)
	go func() { defer close(written); writer(writeCtx, cs, fleetNS, o.Objects, o.WriteEvery) }()
	defer stopWriter()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	ask := func(cmd, reply string, d time.Duration) (string, error) {
		fmt.Fprintln(stdin, cmd)
		l, err := waitLine(ctx, lines, reply, d+time.Minute)
		if err != nil {
			return "", fmt.Errorf("%s: %w", cmd, err)
		}
		return strings.TrimPrefix(l, reply), nil
	}

	// Every store full: the child times each member from its own start.
	l, err := ask(fmt.Sprintf("full %d %d", o.Objects, timeout.Milliseconds()), "FULL ", timeout)
	if err != nil {
		return res, err
	}
	full, err := parseMemberTimes(l)
	if err != nil {
		return res, err
	}
	res.MemberSyncSeconds = full.seconds
	if full.ok {
		res.InitialSyncSeconds = slices.Max(full.seconds)
	}

	// The restart, RestartAfter after the fleet's start, the writer writing throughout.
	time.Sleep(time.Until(fleetStart.Add(restartAfter)))
	restartAt := time.Now()
	if err := acc.restart(ctx, 0, admin); err != nil {
		return res, fmt.Errorf("restart: %w", err)
	}
	res.RestartSeconds = time.Since(restartAt).Seconds()
	// The marker is created on the new server; the child times each member from the restart.
	fmt.Fprintf(stdin, "mark\n")
	if _, err := waitLine(ctx, lines, "MARKED", time.Minute); err != nil {
		return res, err
	}
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: apfRestartMarker, Namespace: fleetNS}}
	if _, err := cs.CoreV1().ConfigMaps(fleetNS).Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("marker: %w", err)
	}
	l, err = ask(fmt.Sprintf("holds %s/%s %d", fleetNS, apfRestartMarker, timeout.Milliseconds()), "HELD ", timeout)
	if err != nil {
		return res, err
	}
	held, err := parseMemberTimes(l)
	if err != nil {
		return res, err
	}
	// The child timed from "mark", sent once the restart had returned; the restart itself
	// (stop, start, ready) is added.
	for i := range held.seconds {
		held.seconds[i] += res.RestartSeconds
	}
	res.MemberConvergeSeconds = held.seconds
	if held.ok {
		res.ConvergeSeconds = slices.Max(held.seconds)
	}

	// The requests are counted over the same window for every kind: up to RestartAfter +
	// Window, the writer still writing (a resource falling quiet would cost re-watches that
	// are the benchmark's, not the set-up's).
	time.Sleep(time.Until(restartAt.Add(window)))
	if base != "" {
		res.RequestLog = base + ".requests.jsonl"
		if _, err := ask("requests "+res.RequestLog, "REQUESTS", time.Minute); err != nil {
			return res, err
		}
	}
	stats, err := ask("stats", "STATS ", time.Minute)
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal([]byte(stats), &res.ClientRequests); err != nil {
		return res, err
	}
	stopWriter()
	if err := acc.end(ctx, admin); err != nil {
		return res, err
	}
	res.ServerCPUSeconds, res.ServerRejected, res.ServerListBytes = acc.cpu, int(acc.rejected), acc.listBytes
	res.ServerRequests = map[string]int{}
	for k, v := range acc.requests {
		res.ServerRequests[k] = int(v)
	}
	l, err = ask("report", "RESULT ", time.Minute)
	if err != nil {
		return res, err
	}
	var c fleetChildResult
	if err := json.Unmarshal([]byte(l), &c); err != nil {
		return res, err
	}
	res.FullStateTransfers, res.FullStateBytes = c.Meter.ListOps+c.Meter.WatchLists, c.Meter.ListBytes+c.Meter.WatchListBytes
	res.Requests, res.TooMany = c.Meter.Lists+c.Meter.Watches+c.Meter.WatchLists, c.Meter.TooMany
	res.MaxRequestsPerReflectorPerMinute = c.MaxPerMinute
	res.ClientCPUSecondsPerMember, res.ClientRSSKiBPerMember = c.CPUSeconds/float64(n), float64(c.MaxRSSKiB)/float64(n)

	// Last, that every store holds the server's state once the writer has stopped (the
	// requests this costs are not counted).
	v, err := settledVersionsIn(ctx, cs, fleetNS)
	if err != nil {
		return res, err
	}
	l, err = ask(fmt.Sprintf("match %d %d %d", len(v), stateHash(v), timeout.Milliseconds()), "MATCHED", timeout)
	if err != nil {
		return res, err
	}
	if l != "" {
		return res, fmt.Errorf("final state: %s", strings.TrimSpace(l))
	}
	if !full.ok || !held.ok {
		return res, fmt.Errorf("full %v, marker held %v within %v", full.ok, held.ok, timeout)
	}
	return res, nil
}

// memberTimes is a child's answer to "full" or "holds": whether every member got there, and
// each member's seconds (-1: not within the timeout).
type memberTimes struct {
	ok      bool
	seconds []float64
}

func parseMemberTimes(l string) (memberTimes, error) {
	f := strings.Fields(l)
	if len(f) != 2 || (f[0] != "ok" && f[0] != "timeout") {
		return memberTimes{}, fmt.Errorf("unreadable member times %q", l)
	}
	t := memberTimes{ok: f[0] == "ok"}
	for _, s := range strings.Split(f[1], ",") {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return t, fmt.Errorf("unreadable member times %q", l)
		}
		t.seconds = append(t.seconds, v)
	}
	return t, nil
}

// waitMembers polls every store until each one satisfies done, or until d has passed since
// from; each member's time is counted from from (-1: never).
func waitMembers(stores func() []*TimedStore, from time.Time, d time.Duration, done func(*TimedStore) bool) memberTimes {
	t := memberTimes{ok: true, seconds: make([]float64, len(stores()))}
	for i := range t.seconds {
		t.seconds[i] = -1
	}
	for {
		left := 0
		for i, s := range stores() {
			if t.seconds[i] < 0 {
				if done(s) {
					t.seconds[i] = time.Since(from).Seconds()
				} else {
					left++
				}
			}
		}
		if left == 0 {
			return t
		}
		if time.Since(from) > d {
			t.ok = false
			return t
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (t memberTimes) String() string {
	parts := make([]string, len(t.seconds))
	for i, s := range t.seconds {
		parts[i] = strconv.FormatFloat(s, 'f', 3, 64)
	}
	state := "ok"
	if !t.ok {
		state = "timeout"
	}
	return state + " " + strings.Join(parts, ",")
}

// WriteAPFRestartTable prints, for each run of ScenarioAPFRestart, the times and the requests
// by verb and code as the fleet's members made them (a watch answered 410 is a WATCH 200 whose
// stream carried the 410).
func WriteAPFRestartTable(w io.Writer, rs []FleetResult) {
	if !slices.ContainsFunc(rs, func(r FleetResult) bool { return r.Scenario == ScenarioAPFRestart }) {
		return
	}
	fmt.Fprintln(w, "| N | kind | every store full s (median member) | restart s | every store back after the restart s (median member) | requests | by verb and code | server rejected |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		if r.Scenario != ScenarioAPFRestart {
			continue
		}
		if r.Err != "" && r.ClientRequests == nil {
			fmt.Fprintf(w, "| %d | %s | error: %s |\n", r.Reflectors, r.Variant, r.Err)
			continue
		}
		total := 0
		keys := make([]string, 0, len(r.ClientRequests))
		for k, v := range r.ClientRequests {
			total += v
			keys = append(keys, k)
		}
		slices.Sort(keys)
		by := make([]string, len(keys))
		for i, k := range keys {
			by[i] = fmt.Sprintf("%s: %d", k, r.ClientRequests[k])
		}
		fmt.Fprintf(w, "| %d | %s | %s (%.1f) | %.1f | %s (%.1f) | %d | %s | %d |\n",
			r.Reflectors, r.Variant, r.syncCell(r.InitialSyncSeconds, true), median(r.MemberSyncSeconds), r.RestartSeconds,
			r.syncCell(r.ConvergeSeconds, r.InitialSyncSeconds >= 0), median(r.MemberConvergeSeconds), total,
			strings.Join(by, ", "), r.ServerRejected)
	}
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

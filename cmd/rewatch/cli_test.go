package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/sim"
	"github.com/rewatch/rewatch/transitions"
)

func TestMain(m *testing.M) {
	// klog (pulled in by client-go) starts its flush daemon at init; it is not ours to stop.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

func runCLI(t *testing.T, ctx context.Context, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb syncbuf.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpIsCompleteForEveryCommand(t *testing.T) {
	// Every tunable of the policy is a flag of watch and demo, named after its journal key.
	var policyFlags []string
	for _, tun := range transitions.Tunables() {
		if tun.CLI {
			policyFlags = append(policyFlags, tun.Key)
		}
	}
	require.Contains(t, policyFlags, "retry-after-cap")
	flags := map[string][]string{
		"demo": append([]string{"objects", "faults", "seed", "duration", "rate", "output", "journal",
			"backoff-initial", "backoff-cap"}, policyFlags...),
		"replay":  {"check", "all", "output"},
		"diagram": {"view", "format", "o"},
	}
	for _, c := range commands() {
		if c.name == "watch" {
			continue // kubectl's flags, with cobra's help: TestWatchHelpHasKubectlsFlags
		}
		t.Run(c.name, func(t *testing.T) {
			want, ok := flags[c.name]
			if !ok {
				t.Fatalf("command %s has no expected flag list in this test", c.name)
			}
			code, out, errOut := runCLI(t, context.Background(), c.name, "--help")
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, s := range []string{"Usage: rewatch " + c.name, "Flags:", "Example:", "  rewatch " + c.name} {
				if !strings.Contains(out, s) {
					t.Errorf("help lacks %q:\n%s", s, out)
				}
			}
			for _, f := range want {
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(f) + `\b`).MatchString(out) {
					t.Errorf("help lacks flag -%s", f)
				}
			}
			if got := len(regexp.MustCompile(`(?m)^  -\S`).FindAllString(out, -1)); got != len(want) {
				t.Errorf("help lists %d flags, this test knows %d: update the test and docs/cli.md", got, len(want))
			}
		})
	}
	code, out, _ := runCLI(t, context.Background(), "--help")
	if code != exitOK || !strings.Contains(out, "Commands:") {
		t.Errorf("top-level help: exit %d\n%s", code, out)
	}
}

// watch takes kubectl get's flags (cli-runtime's ConfigFlags and PrintFlags, get's own) beside
// the reflector's, every tunable among them; --help lists them with cobra's help.
func TestWatchHelpHasKubectlsFlags(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), "watch", "--help")
	require.Equal(t, exitOK, code, errOut)
	require.Empty(t, errOut)
	for _, s := range []string{"Usage:\n  rewatch watch RESOURCE[.GROUP] [NAME | RESOURCE/NAME] [flags]", "Examples:", "Flags:"} {
		require.Contains(t, out, s)
	}
	want := []string{"-n, --namespace", "-A, --all-namespaces", "-l, --selector", "--field-selector", "--kubeconfig", "--context",
		"--cluster", "--user", "-s, --server", "--token", "--insecure-skip-tls-verify", "--request-timeout", "--as",
		"--certificate-authority", "--client-certificate", "--client-key", "--tls-server-name",
		"-o, --output", "--template", "--no-headers", "--show-labels", "-L, --label-columns", "--sort-by", "--show-kind",
		"--show-managed-fields", "--allow-missing-template-keys", "-w, --watch", "--watch-only", "--output-watch-events",
		"--retry-refusals", "--resource", "--group", "--version", "--journal", "--journal-full-capture", "--trace", "--format",
		"--metrics-addr", "--cache-dir", "--cache-url", "--cache-key-file", "--backoff-initial", "--backoff-cap"}
	for _, tun := range transitions.Tunables() {
		if tun.CLI {
			want = append(want, "--"+tun.Key)
		}
	}
	for _, f := range want {
		require.Regexp(t, `(?m)^\s+`+regexp.QuoteMeta(f)+`\b`, out, "help lacks %s", f)
	}
}

func TestUsageErrorsExit2WithOneLine(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("{{{ not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := [][]string{
		{"demo", "--bogus"},
		{"replay", "--bogus", "x"},
		{"diagram", "--bogus"},
		{"nosuchcommand"},
		{"demo", "--faults", "429-start=2,meteor=1"},
		{"demo", "--duration", "-1s"},
		{"demo", "--backoff-initial", "2s", "--backoff-cap", "1s"},
		{"demo", "--retry-after-spread", "2"},
		{"demo", "--quick-watch", "soon"},
		{"replay", filepath.Join(dir, "missing")},
		{"replay", garbage},
		{"replay"},
		{"diagram", "--format", "gif"},
		{"diagram", "--view", "sketch"},
		{"diagram", "--view", "overview", "--format", "mermaid"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, context.Background(), args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stderr %q", code, exitUsage, errOut)
			}
			if lines := strings.Count(errOut, "\n"); lines != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Errorf("stderr is %d lines, want exactly one: %q", lines, errOut)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
		})
	}
}

func TestDiagramMermaid(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), "diagram", "--format", "mermaid")
	if code != exitOK || !strings.HasPrefix(strings.TrimSpace(out), "stateDiagram-v2") {
		t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errOut, out)
	}
	file := filepath.Join(t.TempDir(), "r.dot")
	if code, _, errOut := runCLI(t, context.Background(), "diagram", "--format", "dot", "-o", file); code != exitOK {
		t.Fatalf("-o: exit %d: %s", code, errOut)
	}
	if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "digraph") {
		t.Errorf("dot file: %v\n%s", err, b)
	}
}

func TestDiagramOverviewPNG(t *testing.T) {
	file := filepath.Join(t.TempDir(), "overview.png")
	if code, _, errOut := runCLI(t, context.Background(), "diagram", "--view", "overview", "--format", "png", "-o", file); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(b))
	require.NoError(t, err, "not a PNG")
}

// The demo's promises, end to end: every fault kind injected, the cache converges, and the
// reflector listed once plus once per 410. Its journal then replays exactly.
func TestDemoConvergesAndJournalReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo in real time")
	}
	journalPath := filepath.Join(t.TempDir(), "demo.journal")
	code, out, errOut := runCLI(t, context.Background(), "demo", "--duration", "3s", "--objects", "20", "--journal", journalPath)
	if code != exitOK {
		t.Fatalf("demo: exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{"cache matches server (", "LISTs: 2 (expected 1 + 410s injected = 1 + 1 = 2) ok",
		"server-busy", "internal-error-in-window", "(transport=reset: ", "expired", "(status=410/Expired"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	for _, k := range faultKinds {
		if !strings.Contains(out, fmt.Sprintf(" %s: ", k)) {
			t.Errorf("fault %s was not injected", k)
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out)
	}

	code, out, errOut = runCLI(t, context.Background(), "replay", journalPath, "--check")
	if code != exitOK || !strings.Contains(out, "check: every transition and command matches") {
		t.Fatalf("replay --check: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "Watching  → Relisting  expired") {
		t.Errorf("replay does not show the 410 relist:\n%s", out)
	}

	tampered := filepath.Join(t.TempDir(), "tampered.journal")
	b, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	// A recorded backoff delay that the machine would not choose again.
	re := regexp.MustCompile(`"delay":\d+`)
	if !re.Match(b) {
		t.Fatal("journal has no armed timer to tamper with")
	}
	done := false
	b = re.ReplaceAllFunc(b, func(m []byte) []byte {
		if done {
			return m
		}
		done = true
		return []byte(`"delay":123456789`)
	})
	if err := os.WriteFile(tampered, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, context.Background(), "replay", "--check", tampered)
	if code != exitFailure {
		t.Fatalf("tampered replay: exit %d, want %d\n%s", code, exitFailure, out)
	}
	if !strings.Contains(out, "DIVERGENCE at line") || !strings.Contains(out, "commands differs") ||
		!strings.Contains(out, "123456789") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("divergence report:\nstdout:\n%s\nstderr: %q", out, errOut)
	}
	// Without --check the same file replays: the events are intact.
	if code, _, errOut := runCLI(t, context.Background(), "replay", tampered); code != exitOK {
		t.Errorf("tampered replay without --check: exit %d: %s", code, errOut)
	}

	// A recorded decision the machine no longer makes (a journal written by other code): the
	// replay without --check still runs to the end, and says that what it shows from there on
	// is not what the run did.
	orig, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.Replace(string(orig), `"to":"Relisting","cause":"expired"`, `"to":"Watching","cause":"expired-young-cache"`, 1)
	if rewritten == string(orig) {
		t.Fatal("journal has no 410 relist to rewrite")
	}
	otherCode := filepath.Join(t.TempDir(), "other-code.journal")
	if err := os.WriteFile(otherCode, []byte(rewritten), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, context.Background(), "replay", otherCode)
	if code != exitOK || !strings.Contains(out, "1 of them replayed otherwise than recorded") ||
		!strings.Contains(out, "recorded Watching --expired-young-cache--> Watching, replayed Watching --expired--> Relisting") {
		t.Errorf("replay of a journal whose decisions differ: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if code, out, _ := runCLI(t, context.Background(), "replay", journalPath); code != exitOK || strings.Contains(out, "otherwise than recorded") {
		t.Errorf("replay of an intact journal says it differs: exit %d\n%s", code, out)
	}
}

// simWithConfigMaps starts a simulated server holding n ConfigMaps in "default" (cm-0, cm-1, …),
// closed when the test ends, and writes a kubeconfig for it into a directory of the test's own.
func simWithConfigMaps(t *testing.T, n int) (srv *sim.Server, dir, kubeconfig string) {
	t.Helper()
	srv = sim.New(sim.Options{})
	url, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	for i := range n {
		if _, err := srv.Create(sim.ConfigMaps, "default", fmt.Sprintf("cm-%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "kubeconfig")
	writeKubeconfig(t, kubeconfig, url)
	return srv, dir, kubeconfig
}

// backgroundRun is the CLI running in a goroutine, as `rewatch watch` runs until interrupted:
// what it printed so far, and stop, which interrupts it.
type backgroundRun struct {
	out, err syncbuf.Buffer
	cancel   context.CancelFunc
	done     chan int
}

// startRun runs the CLI with args in the background; the test's end interrupts it if nothing
// stopped it before.
func startRun(t *testing.T, args ...string) *backgroundRun {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	r := &backgroundRun{cancel: cancel, done: make(chan int, 1)}
	go func() { r.done <- run(ctx, args, &r.out, &r.err) }()
	return r
}

// stop interrupts the run and returns its exit status; a run that has not ended 20 s later
// fails the test.
func (r *backgroundRun) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.done:
		return code
	case <-time.After(20 * time.Second):
		t.Fatal("watch did not stop after cancellation")
		return 0
	}
}

// watch against the simulated server through a kubeconfig, as kubectl users would run it.
func TestWatchPrintsTransitionsAndSummary(t *testing.T) {
	srv, dir, kubeconfig := simWithConfigMaps(t, 3)
	journalPath := filepath.Join(dir, "watch.journal")

	w := startRun(t, "watch", "--resource", "configmaps", "--namespace", "default", "--kubeconfig", kubeconfig,
		"--trace=json", "--journal", journalPath)
	out, errb := &w.out, &w.err
	waitFor(t, func() bool { return strings.Contains(errb.String(), `"cause":"watch-opened"`) })
	if _, err := srv.Update(sim.ConfigMaps, "default", "cm-0", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	srv.DropWatches() // a stream end: a transition line, and a re-watch rather than a LIST
	waitFor(t, func() bool { return strings.Count(errb.String(), `"cause":"watch-opened"`) >= 2 })
	if code := w.stop(t); code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	if out.String() == "" {
		t.Fatal("no object rows on stdout")
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{`"type":"summary"`, `"lists":1`, `"objects":3`, `"state":"Stopped"`, `"stream-ended":1`} {
		if !strings.Contains(last, want) {
			t.Errorf("summary lacks %s: %s", want, last)
		}
	}
	if strings.Contains(errb.String(), `"cause":"watch-event"`) {
		t.Error("a line was printed for a watch event")
	}
	if code, rout, rerr := runCLI(t, context.Background(), "replay", "--check", journalPath); code != exitOK {
		t.Fatalf("replay of the watch journal: exit %d, %s\n%s", code, rerr, rout)
	}
}

func writeKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	writeKubeconfigNS(t, path, server, "")
}

// writeKubeconfigNS writes a kubeconfig whose context names namespace (none when empty).
func writeKubeconfigNS(t *testing.T, path, server, namespace string) {
	t.Helper()
	ns := ""
	if namespace != "" {
		ns = "\n    namespace: " + namespace
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: sim
  cluster:
    server: %s
contexts:
- name: sim
  context:
    cluster: sim
    user: nobody%s
users:
- name: nobody
  user: {}
current-context: sim
`, server, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls a loopback server's effect with a generous deadline; it never asserts speed.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watch's mistakes are reported as kubectl reports them, with its exit status, 1: an unknown
// flag as cobra words it with a pointer to --help, an output format kubectl does not know
// with kubectl's list, a kubeconfig that will not load, an argument watch cannot take.
func TestWatchErrorsAsKubectl(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("{{{ not yaml"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "error: unknown flag: --bogus\nSee 'rewatch watch --help' for usage.\n"},
		{[]string{"--resource", "configmaps", "-o", "xml"}, `error: unable to match a printer suitable for the output format "xml", allowed formats are: `},
		{[]string{"--resource", "configmaps", "--output=xml"}, `error: unable to match a printer suitable for the output format "xml"`},
		{[]string{"--resource", "configmaps", "--kubeconfig", filepath.Join(dir, "missing")}, "missing: no such file or directory"},
		{[]string{"--resource", "configmaps", "--kubeconfig", garbage}, "error: "},
		{[]string{"--kubeconfig", garbage}, "error: a resource is required"},
		{[]string{"--resource", "configmaps", "--trace=loud"}, `error: invalid argument "loud" for "--trace" flag: want one of text, json, none`},
		{[]string{"--resource", "configmaps", "--format", "protobuf"}, "error: --format=protobuf: the server prints its tables in JSON only"},
		{[]string{"cm", "-A", "x"}, "error: a resource cannot be retrieved by name across all namespaces\n"},
		{[]string{"cm", "-l", "a=b", "x"}, "error: name cannot be provided when a selector is specified\n"},
		{[]string{"cm/a", "cm/b"}, "error: watch is only supported on individual resources and resource collections, but 2 resources were found\n"},
		{[]string{"--resource", "configmaps", "--watch=false"}, "error: --watch=false: rewatch watch only watches"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// An error is told at once; a run that went on would end here, failing.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code, out, errOut := runCLI(t, ctx, append([]string{"watch"}, tc.args...)...)
			require.Equal(t, exitFailure, code, "stderr %q", errOut)
			require.Contains(t, errOut, tc.want)
			require.True(t, strings.HasSuffix(errOut, "\n"))
			require.Empty(t, out)
		})
	}
}

// --trace takes its value after a space as well as after "=", and a bare --trace is text.
func TestWatchTraceWithASpace(t *testing.T) {
	require.Equal(t, []string{"--trace=json", "cm"}, watchArgs([]string{"--trace", "json", "cm"}))
	require.Equal(t, []string{"--trace", "cm"}, watchArgs([]string{"--trace", "cm"}))
	require.Equal(t, []string{"--", "--trace", "json"}, watchArgs([]string{"--", "--trace", "json"}))
	_, _, kubeconfig := simWithConfigMaps(t, 1)
	w := startRun(t, "watch", "--resource", "configmaps", "-n", "default", "--kubeconfig", kubeconfig, "--trace", "json", "-o", "name")
	waitFor(t, func() bool { return strings.Contains(w.err.String(), `"cause":"watch-opened"`) })
	require.Equal(t, exitOK, w.stop(t), "stderr %q", w.err.String())
	require.Equal(t, "configmap/cm-0\n", w.out.String())
}

// kubectl's short flags work, and with neither -n nor -A the namespace is the kubeconfig
// context's (docs/cli.md): only that namespace's objects are cached.
func TestWatchShortFlagsAndContextNamespace(t *testing.T) {
	srv := sim.New(sim.Options{})
	url, err := srv.Start()
	require.NoError(t, err)
	defer srv.Close()
	for ns, n := range map[string]int{"team-a": 2, "team-b": 3} {
		for i := range n {
			_, err := srv.CreateWithLabels(sim.ConfigMaps, ns, fmt.Sprintf("cm-%d", i), map[string]string{"app": "web"}, nil)
			require.NoError(t, err)
		}
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, url, "team-b")
	for _, tc := range []struct {
		args    []string
		objects string
	}{
		{[]string{"--trace=json"}, `"objects":3`},
		{[]string{"--trace=json", "-n", "team-a", "-l", "app=web"}, `"objects":2`},
		{[]string{"--trace=json", "-A"}, `"objects":5`},
		{[]string{"--trace=json", "--all-namespaces", "-l", "app=db"}, `"objects":0`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			w := startRun(t, append([]string{"watch", "--resource", "configmaps", "--kubeconfig", kubeconfig}, tc.args...)...)
			waitFor(t, func() bool { return strings.Contains(w.err.String(), `"cause":"watch-opened"`) })
			require.Equal(t, exitOK, w.stop(t), "stderr %q", w.err.String())
			lines := strings.Split(strings.TrimSpace(w.err.String()), "\n")
			require.Contains(t, lines[len(lines)-1], tc.objects)
		})
	}
}

// docs/cli.md: a watch stopped before it ever synced (here, kept retrying a 403 with
// --retry-refusals) exits 1 and says why, with the server's message. On the trace, each failed request is one line carrying the server's message as the
// server wrote it: a 403's quotes are not escaped, and no log line repeats it.
func TestWatchStoppedBeforeSyncSaysWhy(t *testing.T) {
	const message = `configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"`
	var mu sync.Mutex
	lists := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lists++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
			"reason": "Forbidden", "code": 403})
		w.Write(b)
	}))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, kubeconfig, api.URL)
	w := startRun(t, "watch", "--resource", "configmaps", "-n", "default", "--kubeconfig", kubeconfig,
		"--backoff-initial", "10ms", "--backoff-cap", "20ms", "--retry-refusals")
	waitFor(t, func() bool { return strings.Count(w.err.String(), "list-rejected") >= 3 })
	require.Equal(t, exitFailure, w.stop(t))
	require.Empty(t, w.out.String(), "no objects: nothing on stdout")
	stderr := w.err.String()
	require.NotContains(t, stderr, `\"`, "the server's message is printed unescaped")
	var rejected, withMessage int
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, l := range lines {
		if strings.Contains(l, "→ Backoff") && strings.Contains(l, "list-rejected") {
			rejected++
			require.Contains(t, l, "(status=403/Forbidden", "the transition line carries the failure")
			require.True(t, strings.HasSuffix(l, ": "+message+")"), "the transition line carries the message: %s", l)
		}
		if strings.Contains(l, message) {
			withMessage++
		}
	}
	mu.Lock()
	// The last request may have been answered after the stop and not taken.
	require.LessOrEqual(t, rejected, lists, "at most one line per failed LIST")
	mu.Unlock()
	// Besides the transition lines: the summary's listing-failing line and the exit line, which
	// name the last one.
	require.Equal(t, rejected+2, withMessage, "%s", stderr)
	last := lines[len(lines)-1]
	require.Contains(t, last, "error: stopped before the initial list completed")
	require.Contains(t, last, "403 Forbidden: "+message)
}

// A request the server refuses before the first sync ends the command at once, with kubectl's
// message and exit status: a 403 as "Error from server (Forbidden): …", a 401 as kubectl's
// "You must be logged in", a 400 (a selector the server cannot parse) as its BadRequest, a 404
// as NotFound; nothing on stdout.
func TestWatchRefusedBeforeSyncExitsAsKubectl(t *testing.T) {
	for _, tc := range []struct {
		code   int
		reason metav1.StatusReason
		msg    string
		want   string
	}{
		{403, metav1.StatusReasonForbidden, `configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"`,
			`Error from server (Forbidden): configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "default"`},
		{401, metav1.StatusReasonUnauthorized, "Unauthorized", "error: You must be logged in to the server (Unauthorized)"},
		{400, metav1.StatusReasonBadRequest, `unable to parse requirement: found '=', expected: identifier`,
			`Error from server (BadRequest): Unable to list "/v1, Resource=configmaps": unable to parse requirement: found '=', expected: identifier`},
		{404, metav1.StatusReasonNotFound, "the server could not find the requested resource",
			`Error from server (NotFound): Unable to list "/v1, Resource=configmaps": the server could not find the requested resource`},
	} {
		t.Run(string(tc.reason), func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				b, _ := json.Marshal(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
					Message: tc.msg, Reason: tc.reason, Code: int32(tc.code)})
				w.Write(b)
			}))
			defer api.Close()
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			writeKubeconfig(t, kubeconfig, api.URL)
			code, out, errOut := runCLI(t, context.Background(), "watch", "--resource", "configmaps", "-n", "default",
				"--kubeconfig", kubeconfig, "--trace=none")
			require.Equal(t, exitFailure, code)
			require.Empty(t, out)
			require.Equal(t, tc.want+"\n", errOut)
		})
	}
}

// kubectl ignores a namespace for a cluster-scoped resource; so does watch, asking discovery,
// so that the context's default namespace does not turn nodes into /namespaces/default/nodes.
func TestWatchClusterScopedIgnoresNamespace(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/api/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[`+
				`{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["list","watch"]},`+
				`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["list","watch"]}]}`)
		case r.URL.Query().Get("watch") == "1" || r.URL.Query().Get("watch") == "true":
			<-r.Context().Done()
		default:
			fmt.Fprint(w, `{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`)
		}
	}))
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, api.URL, "team-a")
	w := startRun(t, "watch", "--resource", "nodes", "--kubeconfig", kubeconfig, "--trace=json")
	waitFor(t, func() bool { return strings.Contains(w.err.String(), `"cause":"list-complete"`) })
	require.Equal(t, exitOK, w.stop(t), "stderr %q", w.err.String())
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, paths, "/api/v1/nodes")
	for _, p := range paths {
		require.NotContains(t, p, "/namespaces/", "a cluster-scoped resource was asked for in a namespace")
	}
}

// watch --cache-dir keeps the cache in a directory: a second watch of the same resource starts
// from it, resumes the watch instead of listing everything, prints the change it missed, and
// its summary says so (docs/semantics.md, "Persisted cache").
func TestWatchCacheDirResumes(t *testing.T) {
	srv, dir, kubeconfig := simWithConfigMaps(t, 3)
	cache := filepath.Join(dir, "cache")
	watch := func(until func(stdout, stderr string) bool, flags ...string) (stdout, summary string) {
		w := startRun(t, append([]string{"watch", "--resource", "configmaps", "--namespace", "default", "--kubeconfig", kubeconfig,
			"--trace=json", "--cache-dir", cache}, flags...)...)
		waitFor(t, func() bool { return until(w.out.String(), w.err.String()) })
		if code := w.stop(t); code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, w.err.String())
		}
		lines := strings.Split(strings.TrimSpace(w.err.String()), "\n")
		return w.out.String(), lines[len(lines)-1]
	}
	// Pages of two: the collection is larger than the probe's page, and the start resumes.
	pages := []string{"--page-size", "2"}
	_, summary := watch(func(_, s string) bool { return strings.Contains(s, `"cause":"watch-opened"`) }, pages...)
	if !strings.Contains(summary, `"start":"listed"`) || !strings.Contains(summary, `"lists":1`) {
		t.Fatalf("first watch's summary: %s", summary)
	}
	if _, err := srv.Create(sim.ConfigMaps, "default", "while-down", nil); err != nil {
		t.Fatal(err)
	}
	out, summary := watch(func(out, _ string) bool { return strings.Contains(out, "while-down") }, pages...)
	if !strings.Contains(summary, `"start":"resumed at rv`) {
		t.Errorf("second watch's summary: %s", summary)
	}
	for _, name := range []string{"cm-0", "cm-2", "while-down"} {
		if !strings.Contains(out, name) {
			t.Errorf("no row for %s:\n%s", name, out)
		}
	}

	// With the default page, the probe's page holds the whole collection: it is the state.
	out, summary = watch(func(out, _ string) bool { return strings.Contains(out, "while-down") })
	if !strings.Contains(summary, `"start":"listed in one page`) || !strings.Contains(summary, `"lists":1`) {
		t.Errorf("third watch's summary: %s", summary)
	}
}

// docs/semantics.md "Persisted cache": a cache that cannot be saved — here a --cache-dir whose
// parent is a file — is said in the summary, with why, rather than believed persisted.
func TestWatchSaysWhenTheCacheIsNotSaved(t *testing.T) {
	_, dir, kubeconfig := simWithConfigMaps(t, 2)
	parent := filepath.Join(dir, "a-file")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, trace := range []string{"--trace=json", "--trace=text"} {
		w := startRun(t, "watch", "--resource", "configmaps", "--namespace", "default", "--kubeconfig", kubeconfig,
			trace, "--cache-dir", filepath.Join(parent, "cache"))
		waitFor(t, func() bool { return strings.Contains(w.err.String(), "watch-opened") })
		if code := w.stop(t); code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, w.err.String())
		}
		stderr := w.err.String()
		want := `"persist":{"saves":0,"failures":1,`
		if trace == "--trace=text" {
			want = "cache saved      FAILING since"
		}
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "not a directory") {
			t.Errorf("%s: the summary does not say the cache is not saved:\n%s", trace, stderr)
		}
	}
}

// docs/cli.md, "Exit status": discovery whose answer stops halfway, the connection held open,
// ends the command within --request-timeout (by default client-go's discovery client bounds
// each request at 32 s), with kubectl's wording and exit status, rather than hang.
func TestWatchDiscoveryThatStallsEnds(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfig(t, kubeconfig, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, _, stderr := runCLI(t, ctx, "watch", "configmaps", "--kubeconfig", kubeconfig, "--request-timeout", "1s")
	if ctx.Err() != nil {
		t.Fatalf("rewatch watch hung on a stalled discovery: %s", stderr)
	}
	if code != 1 || !strings.Contains(stderr, "Client.Timeout") && !strings.Contains(stderr, "deadline exceeded") && !strings.Contains(stderr, "timeout") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

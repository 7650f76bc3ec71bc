package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/syncbuf"
	"github.com/rewatch/rewatch/internal/testbackend"
)

// buildCLI builds cmd/rewatch once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rewatch")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/rewatch").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// plainProxy is a fault proxy with no rules in front of b: kubectl's way to the server, with
// the credentials the proxy adds, as rewatch's own proxy has them.
func plainProxy(t *testing.T, b backend) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(faultproxy.Config{Upstream: b.URL(), Transport: b.Transport()})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// proxyKubeconfig writes a kubeconfig whose only context reaches server with no credentials,
// as the CLI's users' kubeconfigs are read, and returns its path.
func proxyKubeconfig(t *testing.T, server string) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "`+server+`"}}]
users: [{name: nobody, user: {}}]
contexts: [{name: proxy, context: {cluster: proxy, user: nobody}}]
current-context: proxy
`), 0o600))
	return kubeconfig
}

// `rewatch watch` against the real kube-apiserver, through the fault proxy,
// shows the expected transitions, and the journal it records replays with --check.
func TestCLIWatchAgainstRealServerReplays(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 5)
	e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Times: 1,
		Fault: faultproxy.Respond(faultproxy.TooManyRequests(1)).WithHeader("Retry-After", "1")})
	e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Nth: 2, Times: 1, Fault: faultproxy.WatchError(faultproxy.Expired()).AfterEvents(1)})
	bin := buildCLI(t)
	dir := t.TempDir()
	kubeconfig := proxyKubeconfig(t, e.proxy.URL())
	journalPath := filepath.Join(dir, "journal.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "watch", "--resource", "configmaps", "--namespace", e.ns,
		"--kubeconfig", kubeconfig, "--journal", journalPath)
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	ok := waitFor(30*time.Second, func() bool { return len(e.requests(faultproxy.Watch)) >= 2 })
	require.True(t, ok, "no re-watch after the 429:\n%s\n%s", stdout.String(), stderr.String())
	e.write("a")
	// The CLI also asks discovery (GET /api/v1) whether the resource is namespaced; only the
	// LISTs of the resource count.
	resourceLists := func() (n int) {
		for _, r := range e.requests(faultproxy.List) {
			if strings.HasSuffix(r.Path, "/configmaps") {
				n++
			}
		}
		return n
	}
	require.True(t, waitFor(30*time.Second, func() bool { return resourceLists() >= 2 }), e.describe())
	e.write("b")
	time.Sleep(500 * time.Millisecond) // let the last writes arrive before stopping
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	start := time.Now()
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	require.Less(t, time.Since(start), time.Second, "SIGINT stops within a second")

	// The reflector's story and the summary are on stderr; stdout has the objects.
	story := stderr.String()
	for _, want := range []string{"server-busy", "retry-watch", "expired", "list-complete", "LISTs avoided"} {
		require.Contains(t, story, want)
	}
	require.Contains(t, stdout.String(), "NAME")
	require.Equal(t, 2, resourceLists(), "one LIST, plus one for the 410: %v", e.requests(faultproxy.List))

	replay, err := exec.Command(bin, "replay", "--check", journalPath).CombinedOutput()
	require.NoError(t, err, "%s", replay)
	require.True(t, strings.Contains(string(replay), "server-busy"), "%s", replay)
	e.report("CLI `rewatch watch` (429 at start, then 410)", "journal replays with --check")
}

// `rewatch watch configmaps -n NS` and `rewatch watch deployments.apps -n NS`, as kubectl users
// type them, against the real kube-apiserver: the resource is resolved through the server's
// discovery (apps to its preferred v1) and listed and watched there.
func TestCLIWatchResourceAsKubectlTypesIt(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 3)
	bin := buildCLI(t)
	kubeconfig := proxyKubeconfig(t, e.proxy.URL())
	for _, tc := range []struct {
		resource, path string
		objects        int
	}{
		{"configmaps", "/api/v1/namespaces/" + e.ns + "/configmaps", 3},
		{"deployments.apps", "/apis/apps/v1/namespaces/" + e.ns + "/deployments", 0},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "watch", tc.resource, "-n", e.ns, "--kubeconfig", kubeconfig, "--trace=json")
			var stdout, stderr syncbuf.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			synced := waitFor(30*time.Second, func() bool { return strings.Contains(stderr.String(), `"cause":"list-complete"`) })
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
			require.True(t, synced, "no list-complete:\n%s\n%s", stdout.String(), stderr.String())
			listed := false
			for _, r := range e.requests(faultproxy.List) {
				listed = listed || r.Path == tc.path
			}
			require.True(t, listed, "no LIST of %s: %v", tc.path, e.requests(faultproxy.List))
			require.Contains(t, stderr.String(), fmt.Sprintf(`"objects":%d`, tc.objects))
			require.Equal(t, tc.objects, strings.Count(stdout.String(), "\n")-min(tc.objects, 1), "a row per object, under a header")
		})
	}
	e.report("CLI `rewatch watch configmaps` / `deployments.apps`", "resolved through discovery")
}

// kubectlBin is kubectl built from the k8s.io/kubernetes module the test server is built from
// (scripts/build-apiserver.sh builds it next to kube-apiserver, and again only when stale).
func kubectlBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(apiserver.BinDir(), "kubectl")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("bash", "../scripts/build-apiserver.sh")
	cmd.Env = append(os.Environ(), "REWATCH_BIN_DIR="+apiserver.BinDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		testbackend.Unavailable(t, fmt.Errorf("kubectl: scripts/build-apiserver.sh: %w\n%s", err, out))
	}
	return bin
}

// eventRows is the (EVENT, NAME) of each row of kubectl get -w --output-watch-events output,
// the header left out; as "TYPE name".
func eventRows(out string) []string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] == "EVENT" {
			continue
		}
		rows = append(rows, f[0]+" "+f[1])
	}
	return rows
}

// `rewatch watch` and kubectl get -w, built from the same k8s.io/kubernetes as the server, side
// by side on the same changes print the same event rows in the same order: the initial list,
// creates, updates and deletes. rewatch's watch is then ended by a 410 (from its fault proxy)
// and its relist held back by 500s while the namespace changes: the relist prints exactly the
// changes kubectl's uninterrupted watch shows, and nothing for the objects it finds unchanged
// (docs/semantics.md, "Relists"); the rows after it match again.
func TestCLIWatchPrintsWhatKubectlPrints(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 3)
	kubectl := kubectlBin(t)
	bin := buildCLI(t)
	// kubectl gets a proxy of its own, without faults, for the credentials the proxy adds.
	kp := plainProxy(t, b)

	// rewatch's first watch ends with a 410 after the four events of e.write("a"); its relist
	// (the second LIST of the configmaps) is refused until the rule is cleared.
	e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, PathContains: "/configmaps", Times: 1,
		Fault: faultproxy.WatchError(faultproxy.Expired()).AfterEvents(4)})
	refused := e.proxy.AddRule(faultproxy.Rule{Kind: faultproxy.List, PathContains: "/configmaps", Nth: 2, Times: -1,
		Fault: faultproxy.Respond(faultproxy.InternalError())})

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var kout, kerr, rout, rerr syncbuf.Buffer
	kcmd := exec.CommandContext(ctx, kubectl, "get", "configmaps", "-n", e.ns, "-w", "--output-watch-events",
		"--kubeconfig", proxyKubeconfig(t, kp.URL()))
	kcmd.Stdout, kcmd.Stderr = &kout, &kerr
	rcmd := exec.CommandContext(ctx, bin, "watch", "configmaps", "-n", e.ns, "-w", "--output-watch-events", "--trace=json",
		"--backoff-initial", "100ms", "--backoff-cap", "200ms", "--kubeconfig", proxyKubeconfig(t, e.proxy.URL()))
	rcmd.Stdout, rcmd.Stderr = &rout, &rerr
	require.NoError(t, kcmd.Start())
	require.NoError(t, rcmd.Start())
	defer func() {
		_ = kcmd.Process.Kill()
		_ = rcmd.Process.Kill()
		_ = kcmd.Wait()
		_ = rcmd.Wait()
	}()
	describe := func() string {
		return fmt.Sprintf("kubectl:\n%s%s\nrewatch:\n%s%s\n%s", kout.String(), kerr.String(), rout.String(), rerr.String(), e.describe())
	}
	// Both print the same rows, once the later of the two has caught up.
	same := func(want []string) {
		t.Helper()
		ok := waitFor(30*time.Second, func() bool {
			return slices.Equal(eventRows(kout.String()), want) && slices.Equal(eventRows(rout.String()), want)
		})
		require.True(t, ok, "want %q\n%s", want, describe())
	}
	want := []string{"ADDED obj-0", "ADDED obj-1", "ADDED obj-2"}
	same(want)
	// Both watch from their lists' resourceVersions, so writes from now on reach both.
	require.True(t, waitFor(30*time.Second, func() bool {
		return len(e.requests(faultproxy.Watch)) > 0 && strings.Contains(rerr.String(), `"cause":"watch-opened"`)
	}), describe())

	e.write("a")
	want = append(want, "MODIFIED obj-0", "ADDED new-a", "DELETED new-a", "ADDED kept-a")
	same(want)

	// The 410 has ended rewatch's watch and its relist is being refused: the namespace changes
	// meanwhile, in an order the relist tells the same way (list order, deletions last).
	require.True(t, waitFor(30*time.Second, func() bool { return refused.Fired() > 0 }), describe())
	bg := context.Background()
	require.NoError(t, b.Put(bg, e.gvr, e.ns, "obj-1", "gap"))
	require.NoError(t, b.Put(bg, e.gvr, e.ns, "obj-3", "gap"))
	require.NoError(t, b.Delete(bg, e.gvr, e.ns, "obj-2"))
	e.proxy.ClearRules()
	want = append(want, "MODIFIED obj-1", "ADDED obj-3", "DELETED obj-2")
	same(want)
	// The relist went through: obj-0 and kept-a, unchanged, printed nothing.
	require.True(t, waitFor(30*time.Second, func() bool { return strings.Count(rerr.String(), `"cause":"list-complete"`) == 2 }), describe())

	e.write("b")
	want = append(want, "MODIFIED obj-0", "ADDED new-b", "DELETED new-b", "ADDED kept-b")
	same(want)
	require.Contains(t, rerr.String(), `"cause":"expired"`, "rewatch relisted after the 410")
	require.NotContains(t, kout.String()+kerr.String(), "Expired", "kubectl's watch never failed")

	require.NoError(t, rcmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, rcmd.Wait(), "stderr: %s", rerr.String())
	// The header of each is kubectl's: EVENT NAME DATA AGE.
	require.Equal(t, strings.Fields(strings.SplitN(kout.String(), "\n", 2)[0]), strings.Fields(strings.SplitN(rout.String(), "\n", 2)[0]))
	e.report("CLI `rewatch watch` beside `kubectl get -w`", fmt.Sprintf("%d rows alike across a 410 and a refused relist", len(want)))
}

// `rewatch watch --cache-dir` on the real kube-apiserver (docs/semantics.md, "Persisted cache"):
// the first watch lists and leaves a snapshot when it stops; the second, after a change made
// while it was down, lists nothing of everything — one limit=1 read (pages of two: the five
// objects are more than the probe's page), then a watch from the snapshot's resourceVersion —
// prints the change, and its summary says it resumed. A third, with the default page, takes the
// probe's page, the whole collection, as its state: one request.
func TestCLIWatchCacheDirResumesOnTheRealServer(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 5)
	bin := buildCLI(t)
	kubeconfig := proxyKubeconfig(t, e.proxy.URL())
	cache := filepath.Join(t.TempDir(), "cache")
	watch := func(until func(stdout, stderr string) bool, flags ...string) (stdout, summary string) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"watch", "--resource", "configmaps", "-n", e.ns, "--kubeconfig", kubeconfig,
			"--trace=json", "--cache-dir", cache}, flags...)...)
		var out, errb syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		require.NoError(t, cmd.Start())
		ok := waitFor(60*time.Second, func() bool { return until(out.String(), errb.String()) })
		require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
		require.NoError(t, cmd.Wait(), "stderr: %s", errb.String())
		require.True(t, ok, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		return out.String(), lines[len(lines)-1]
	}
	resourceLists := func() (full, probes int) {
		for _, r := range e.requests(faultproxy.List) {
			if !strings.HasSuffix(r.Path, "/configmaps") || r.Query.Get("continue") != "" {
				continue // a listing's later pages
			}
			if r.Query.Get("limit") == "1" {
				probes++
			} else {
				full++
			}
		}
		return full, probes
	}

	pages := []string{"--page-size", "2"}
	_, summary := watch(func(_, errs string) bool { return strings.Contains(errs, `"cause":"watch-opened"`) }, pages...)
	require.Contains(t, summary, `"start":"listed"`)
	full, _ := resourceLists()
	require.Equal(t, 1, full)
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	require.NotEmpty(t, entries, "a snapshot in the cache directory")

	require.NoError(t, b.Put(context.Background(), configMaps, e.ns, "while-down", "x"))
	// The resume watch is short (its deadline bookmark is what catches a quiet resource up):
	// once a second watch has opened, the start has gone one way or the other.
	out, summary := watch(func(out, errs string) bool {
		return strings.Contains(out, "while-down") && strings.Count(errs, `"cause":"watch-opened"`) >= 2
	}, pages...)
	require.Contains(t, summary, `"start":"resumed at rv`, "the second start")
	full, probes := resourceLists()
	require.Equal(t, 1, full, "no LIST of everything on the second start")
	require.Equal(t, 1, probes, "one limit=1 read")
	for i := range 5 {
		require.Contains(t, out, fmt.Sprintf("obj-%d", i), "the snapshot's objects are printed as the initial list")
	}
	e.report("CLI `rewatch watch --cache-dir` restarted", "resumed: no LIST of everything")

	out, summary = watch(func(out, errs string) bool { return strings.Contains(errs, `"cause":"watch-opened"`) })
	require.Contains(t, summary, `"start":"listed in one page`, "the third start")
	require.Contains(t, summary, `"lists":1`)
	require.Contains(t, out, "while-down")
}

// No command writes a shared, predictable path: with TMPDIR a fresh directory, `rewatch
// demo`, `rewatch watch` (on the real server, until it is watching) and `rewatch diagram
// --format png` leave it empty — Graphviz's wasm runtime, which compiled itself into
// $TMPDIR/go-graphviz at every start, is not linked (docs/cli.md, "rewatch diagram").
func TestCLIStartsWriteNothingInTMPDIR(t *testing.T) {
	b := sharedReal(t)
	e := newEnv(t, b, configMaps, 1)
	bin := buildCLI(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	demo := exec.CommandContext(ctx, bin, "demo", "--duration", "1s", "--objects", "5", "--faults", "none")
	demo.Env = env
	out, err := demo.CombinedOutput()
	require.NoError(t, err, "%s", out)

	png := exec.CommandContext(ctx, bin, "diagram", "--view", "overview", "--format", "png", "-o", filepath.Join(t.TempDir(), "o.png"))
	png.Env = env
	out, err = png.CombinedOutput()
	require.NoError(t, err, "%s", out)

	watch := exec.CommandContext(ctx, bin, "watch", "configmaps", "-n", e.ns, "--kubeconfig", proxyKubeconfig(t, e.proxy.URL()), "--trace=json")
	watch.Env = env
	var stdout, stderr syncbuf.Buffer
	watch.Stdout, watch.Stderr = &stdout, &stderr
	require.NoError(t, watch.Start())
	ok := waitFor(30*time.Second, func() bool { return strings.Contains(stderr.String(), `"cause":"watch-opened"`) })
	require.NoError(t, watch.Process.Signal(syscall.SIGINT))
	require.NoError(t, watch.Wait(), "stderr: %s", stderr.String())
	require.True(t, ok, "never watching: %s", stderr.String())

	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	require.Empty(t, names, "the commands wrote into TMPDIR")
	e.report("CLI demo, watch and diagram with a fresh TMPDIR", "nothing written there")
}

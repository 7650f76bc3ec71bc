package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/syncbuf"
)

// buildCLI builds cmd/rewatch once per test binary.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "rewatch")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/rewatch").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
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

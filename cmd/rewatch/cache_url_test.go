package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/sim"
)

// writeKeyFile writes a key file of n fresh keys, as `openssl rand -base64 32` makes them.
func writeKeyFile(t *testing.T, dir string, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("# newest first\n")
	for range n {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		b.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
	}
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// watchTwice runs `rewatch watch` of the simulator's ConfigMaps with flags, stops it, writes an
// object, and runs it again until it prints that object: it returns the second run's summary.
func watchTwice(t *testing.T, srv *sim.Server, kubeconfig, written string, flags ...string) (first, second string) {
	t.Helper()
	watch := func(until func(stdout, stderr string) bool) string {
		w := startRun(t, append([]string{"watch", "--resource", "configmaps", "--namespace", "default", "--kubeconfig", kubeconfig,
			"--trace=json", "--page-size", "2"}, flags...)...)
		waitFor(t, func() bool { return until(w.out.String(), w.err.String()) })
		if code := w.stop(t); code != exitOK {
			t.Fatalf("exit %d, stderr %q", code, w.err.String())
		}
		lines := strings.Split(strings.TrimSpace(w.err.String()), "\n")
		return lines[len(lines)-1]
	}
	first = watch(func(_, s string) bool { return strings.Contains(s, `"cause":"watch-opened"`) })
	if _, err := srv.Create(sim.ConfigMaps, "default", written, nil); err != nil {
		t.Fatal(err)
	}
	second = watch(func(out, _ string) bool { return strings.Contains(out, written) })
	return first, second
}

// --cache-url file:///path with --cache-key-file keeps a sealed snapshot in the directory, and
// a second watch resumes from it (docs/semantics.md, "Persisted cache", "Sealed").
func TestWatchCacheURLFileSealed(t *testing.T) {
	srv, dir, kubeconfig := simWithConfigMaps(t, 3)
	cache := filepath.Join(dir, "cache")
	keys := writeKeyFile(t, dir, 2)
	first, second := watchTwice(t, srv, kubeconfig, "while-down", "--cache-url", "file://"+cache, "--cache-key-file", keys)
	if !strings.Contains(first, `"start":"listed"`) {
		t.Fatalf("first watch's summary: %s", first)
	}
	if !strings.Contains(second, `"start":"resumed at rv`) {
		t.Errorf("second watch's summary: %s", second)
	}
	files, _ := filepath.Glob(filepath.Join(cache, "*.snap"))
	if len(files) != 1 {
		t.Fatalf("snapshots in %s: %v", cache, files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(raw), "\x89RWSEAL\n") || strings.Contains(string(raw), "while-down") {
		t.Errorf("the snapshot is not sealed: %q", raw[:32])
	}
	// The same directory without the keys refuses the sealed snapshot, and says why.
	summary, _ := watchTwice(t, srv, kubeconfig, "without-keys", "--cache-dir", cache)
	if !strings.Contains(summary, `"start":"listed; snapshot refused: sealed: it is read with the keys that sealed it`) {
		t.Errorf("without keys: %s", summary)
	}
}

// The cache flags' mistakes are said in one line, kubectl's way (exit 1), before anything is
// contacted.
func TestWatchCacheFlagsAreChecked(t *testing.T) {
	dir := t.TempDir()
	keys := writeKeyFile(t, dir, 1)
	bad := filepath.Join(dir, "bad-keys")
	if err := os.WriteFile(bad, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"watch", "--resource", "configmaps", "--server", "http://127.0.0.1:1"}
	for want, flags := range map[string][]string{
		"--cache-url: objstore: no sealing key":               {"--cache-url", "s3://bucket/prefix"},
		"--cache-dir and --cache-url both say":                {"--cache-dir", dir, "--cache-url", "file://" + dir},
		"--cache-url: objstore: cache URL: unknown parameter": {"--cache-url", "s3://bucket?endpont=x", "--cache-key-file", keys},
		`scheme "gs" is not file or s3`:                       {"--cache-url", "gs://bucket", "--cache-key-file", keys},
		"--cache-key-file seals the snapshot of --cache-dir":  {"--cache-key-file", keys},
		"--cache-key-file: persist: key on line 1: neither":   {"--cache-dir", dir, "--cache-key-file", bad},
		"--cache-key-file: persist: keys: open":               {"--cache-dir", dir, "--cache-key-file", filepath.Join(dir, "missing")},
	} {
		code, out, errOut := runCLI(t, context.Background(), append(base, flags...)...)
		if code != exitFailure || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "error: ") || !strings.Contains(errOut, want) {
			t.Errorf("%v: exit %d, stderr %q, want an error saying %q", flags, code, errOut, want)
		}
	}
}

// --cache-url s3://… keeps the snapshot in a real bucket (SeaweedFS), sealed, with the
// credentials of the environment: a second watch — another pod, an empty directory — resumes.
func TestWatchCacheURLS3(t *testing.T) {
	s3 := apiserver.RequireSeaweedFS(t, apiserver.SeaweedOptions{Buckets: []string{"cli"}})
	t.Setenv("AWS_ACCESS_KEY_ID", apiserver.SeaweedAccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", apiserver.SeaweedSecretKey)
	srv, dir, kubeconfig := simWithConfigMaps(t, 3)
	keys := writeKeyFile(t, dir, 1)
	url := "s3://cli/team-a?endpoint=" + s3.Endpoint() + "&region=us-east-1"
	first, second := watchTwice(t, srv, kubeconfig, "while-down", "--cache-url", url, "--cache-key-file", keys)
	if !strings.Contains(first, `"start":"listed"`) || !strings.Contains(first, `"persist":{"saves":1`) {
		t.Fatalf("first watch's summary: %s", first)
	}
	if !strings.Contains(second, `"start":"resumed at rv`) {
		t.Errorf("second watch's summary: %s", second)
	}
}

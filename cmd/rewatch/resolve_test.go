package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// discoveryServer serves discovery as a kube-apiserver does (the core group, apps at v1 and
// v1beta1 with v1 preferred, short names) and an empty list and a held-open watch for any
// other path, and records the paths of the LISTs it is asked for.
type discoveryServer struct {
	*httptest.Server
	mu    sync.Mutex
	lists []string
}

func newDiscoveryServer(t *testing.T) *discoveryServer {
	d := &discoveryServer{}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
		case "/apis":
			fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps",`+
				`"versions":[{"groupVersion":"apps/v1","version":"v1"},{"groupVersion":"apps/v1beta1","version":"v1beta1"}],`+
				`"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}]}`)
		case "/api/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[`+
				`{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["list","watch"],"shortNames":["no"]},`+
				`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["list","watch"],"shortNames":["cm"]}]}`)
		case "/apis/apps/v1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1","resources":[`+
				`{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["list","watch"],"shortNames":["deploy"]}]}`)
		case "/apis/apps/v1beta1":
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"apps/v1beta1","resources":[`+
				`{"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["list","watch"]}]}`)
		default:
			if q := r.URL.Query().Get("watch"); q == "1" || q == "true" {
				<-r.Context().Done()
				return
			}
			d.mu.Lock()
			d.lists = append(d.lists, r.URL.Path)
			d.mu.Unlock()
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[]}`)
		}
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *discoveryServer) listed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lists...)
}

// A resource typed as kubectl users type it — plural, singular or short name, with .group or
// .version.group, flags before or after it — is resolved through discovery to the version the
// group prefers, and watched there.
func TestWatchResolvesTheResourceAsKubectlDoes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		list string
	}{
		{[]string{"configmaps", "-n", "kube-system"}, "/api/v1/namespaces/kube-system/configmaps"},
		{[]string{"-n", "kube-system", "cm"}, "/api/v1/namespaces/kube-system/configmaps"},
		{[]string{"configmap"}, "/api/v1/namespaces/team-a/configmaps"},
		{[]string{"deployments.apps"}, "/apis/apps/v1/namespaces/team-a/deployments"},
		{[]string{"deploy", "-A"}, "/apis/apps/v1/deployments"},
		{[]string{"deployments.v1beta1.apps", "-n", "x"}, "/apis/apps/v1beta1/namespaces/x/deployments"},
		{[]string{"Deployments.Apps"}, "/apis/apps/v1/namespaces/team-a/deployments"},
		{[]string{"nodes"}, "/api/v1/nodes"}, // cluster-scoped: the context's namespace is ignored
		{[]string{"--resource", "deployments", "--group", "apps", "--version", "v1beta1"}, "/apis/apps/v1beta1/namespaces/team-a/deployments"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			srv := newDiscoveryServer(t)
			kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
			writeKubeconfigNS(t, kubeconfig, srv.URL, "team-a")
			w := startRun(t, append([]string{"watch", "--kubeconfig", kubeconfig, "--trace=json"}, tc.args...)...)
			waitFor(t, func() bool {
				return strings.Contains(w.err.String(), `"cause":"list-complete"`) || strings.Contains(w.err.String(), "rewatch watch:")
			})
			require.Equal(t, exitOK, w.stop(t), "stderr %q", w.err.String())
			require.Equal(t, []string{tc.list}, srv.listed())
		})
	}
}

// A name discovery does not know is an error worded as kubectl words it (exit 1, as kubectl's); a resource given
// both ways, or two resources, are usage errors too.
func TestWatchResourceArgumentErrors(t *testing.T) {
	srv := newDiscoveryServer(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, srv.URL, "team-a")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"configmapz"}, `the server doesn't have a resource type "configmapz"`},
		{[]string{"deployments.nope"}, `the server doesn't have a resource type "deployments.nope"`},
		{[]string{"configmaps", "--resource", "configmaps"}, "either as RESOURCE[.GROUP] or with --resource"},
		{[]string{"deployments", "--group", "apps"}, "either as RESOURCE[.GROUP] or with --resource"},
		{[]string{"configmaps", "a", "b"}, "watch is only supported on individual resources and resource collections, but 2 resources were found"},
		{nil, "a resource is required"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, errOut := runCLI(t, context.Background(), append([]string{"watch", "--kubeconfig", kubeconfig}, tc.args...)...)
			require.Equal(t, exitFailure, code, "stderr %q", errOut)
			require.True(t, strings.HasPrefix(errOut, "error: "), errOut)
			require.Contains(t, errOut, tc.want)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
		})
	}
	require.Empty(t, srv.listed(), "a LIST was made for a resource that was refused")
}

// Discovery the server does not answer is told as kubectl tells a server's error (exit 1).
func TestWatchDiscoveryUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, srv.URL, "team-a")
	code, _, errOut := runCLI(t, context.Background(), "watch", "configmaps", "--kubeconfig", kubeconfig)
	require.Equal(t, exitFailure, code, "stderr %q", errOut)
	require.Equal(t, "Error from server (ServiceUnavailable): the server is currently unable to handle the request\n", errOut)
}

// Discovery refused (an anonymous user may not read /api) is told once, as kubectl tells a
// refusal, with the server's message: not client-go's "unknown", and no klog line on stderr
// besides it.
func TestWatchDiscoveryForbidden(t *testing.T) {
	const message = `forbidden: User "system:anonymous" cannot get path "/api"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		b, _ := json.Marshal(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"message": strings.Replace(message, "/api", r.URL.Path, 1), "reason": "Forbidden", "code": 403})
		w.Write(b)
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	writeKubeconfigNS(t, kubeconfig, srv.URL, "team-a")
	// klog writes to the process's stderr, not to run's: watch that too.
	r, w, err := os.Pipe()
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = w
	code, _, errOut := runCLI(t, context.Background(), "watch", "configmaps", "--kubeconfig", kubeconfig)
	os.Stderr = saved
	require.NoError(t, w.Close())
	processStderr, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, exitFailure, code, "stderr %q", errOut)
	require.Equal(t, "Error from server (Forbidden): "+message+"\n", errOut)
	require.Empty(t, string(processStderr), "a log line repeated the failure")
}

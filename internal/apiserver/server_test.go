package apiserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func newNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func TestRealServerServesClientGo(t *testing.T) {
	s := RequireServer(t, Options{})
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	require.NoError(t, err)
	ctx := t.Context()
	newNamespace(t, cs, "rewatch")

	_, err = cs.CoreV1().ConfigMaps("rewatch").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "hello"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	list, err := cs.CoreV1().ConfigMaps("rewatch").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "v", list.Items[0].Data["k"])
	assert.NotEmpty(t, list.ResourceVersion)

	hc, err := s.HTTPClient()
	require.NoError(t, err)
	resp, err := hc.Get(s.URL() + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "ok", string(body))

	// RBAC is on: the limited user reads but may not write.
	limited, err := kubernetes.NewForConfig(s.LimitedRESTConfig())
	require.NoError(t, err)
	_, err = limited.CoreV1().ConfigMaps("rewatch").List(ctx, metav1.ListOptions{})
	assert.NoError(t, err)
	_, err = limited.CoreV1().ConfigMaps("rewatch").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
}

// A watch from a compacted resourceVersion fails with a real 410. The
// watch cache is off so the watch reaches etcd; with it on, the cache would
// serve the recent history that etcd has dropped.
func TestCompactionGivesExpired(t *testing.T) {
	s := RequireServer(t, Options{ExtraArgs: []string{"--watch-cache=false"}})
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	require.NoError(t, err)
	ctx := t.Context()
	newNamespace(t, cs, "rewatch")

	cm, err := cs.CoreV1().ConfigMaps("rewatch").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	oldRV := cm.ResourceVersion
	for i := range 3 {
		cm.Data = map[string]string{"i": string(rune('0' + i))}
		cm, err = cs.CoreV1().ConfigMaps("rewatch").Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.NoError(t, s.Compact(ctx))

	w, err := cs.CoreV1().ConfigMaps("rewatch").Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
	if err == nil {
		// The server opened the watch and reports the expiry as its first
		// event.
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			require.Equal(t, watch.Error, ev.Type, "%#v", ev)
			err = apierrors.FromObject(ev.Object)
			t.Logf("watch at compacted RV %s: ERROR event: %v", oldRV, err)
		case <-time.After(30 * time.Second):
			t.Fatal("no event from a watch at a compacted resourceVersion")
		}
	} else {
		t.Logf("watch at compacted RV %s: HTTP error: %v", oldRV, err)
	}
	assert.True(t, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "%v", err)
	var st apierrors.APIStatus
	require.True(t, errors.As(err, &st))
	assert.EqualValues(t, http.StatusGone, st.Status().Code)
}

// With --max-requests-inflight=1, a second non-watch request from a user
// outside system:masters is rejected with a real 429 while the first one
// holds the only slot. Pausing etcd makes the first one hold it.
func TestMaxInflightGivesTooManyRequests(t *testing.T) {
	s := RequireServer(t, Options{MaxRequestsInflight: 1})
	hc, err := httpClientFor(s, true)
	require.NoError(t, err)
	url := s.URL() + "/api/v1/namespaces/default/configmaps"

	require.NoError(t, s.PauseEtcd())
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			assert.NoError(t, s.ResumeEtcd())
		}
	}
	defer resume()

	holdCtx, cancelHold := context.WithCancel(t.Context())
	held := make(chan struct{})
	go func() {
		defer close(held)
		// resourceVersion unset: a consistent read, which needs etcd. A
		// holder that ends anyway (an error from the stalled etcd) is
		// replaced, so that the slot stays taken.
		for holdCtx.Err() == nil {
			req, _ := http.NewRequestWithContext(holdCtx, http.MethodGet, url, nil)
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()

	var got *http.Response
	outcomes := map[string]int{}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"?resourceVersion=0", nil)
		resp, err := hc.Do(req)
		if err != nil {
			outcomes[err.Error()]++
		} else {
			outcomes[resp.Status]++
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				got = resp
				t.Logf("429 after %s: Retry-After=%q body=%s", 20*time.Second-time.Until(deadline), resp.Header.Get("Retry-After"), body)
				cancel()
				break
			}
		}
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
	resume()
	cancelHold()
	<-held
	require.NotNil(t, got, "no 429 from a server with --max-requests-inflight=1; probes: %v", outcomes)
	assert.NotEmpty(t, got.Header.Get("Retry-After"))
}

func httpClientFor(s *Server, limited bool) (*http.Client, error) {
	cfg := s.RESTConfig()
	if limited {
		cfg = s.LimitedRESTConfig()
	}
	return rest.HTTPClientFor(cfg)
}

func TestRestartAndStopLeaveNoProcess(t *testing.T) {
	s := RequireServer(t, Options{})
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	require.NoError(t, err)
	ctx := t.Context()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	oldPID := s.api.cmd.Process.Pid
	require.NoError(t, s.RestartAPIServer(ctx))
	assert.NotEqual(t, oldPID, s.api.cmd.Process.Pid)
	assert.True(t, gone(oldPID))
	// The open watch ended with the old process.
	select {
	case _, ok := <-w.ResultChan():
		for ok {
			_, ok = <-w.ResultChan()
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch survived the restart")
	}
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)

	pids := []int{s.api.cmd.Process.Pid, s.etcd.cmd.Process.Pid}
	require.NoError(t, s.PauseEtcd())
	s.Stop() // must not hang on a stopped etcd
	for _, pid := range pids {
		assert.True(t, gone(pid), "pid %d still running", pid)
	}
	s.Stop()
}

// gone reports whether pid no longer exists (it was reaped by Stop).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// With etcd frozen, requests that need it fail with real server errors
// once their timeout runs out; requests the watch cache serves still work.
func TestPausedEtcdGivesServerErrors(t *testing.T) {
	s := RequireServer(t, Options{})
	hc, err := s.HTTPClient()
	require.NoError(t, err)
	base := s.URL() + "/api/v1/namespaces/default/configmaps"
	// With etcd frozen the server answers a request that needs it with a 5xx when its timeout
	// fires, or, when the timeout handler gives up on the request mid-way, by resetting the
	// HTTP/2 stream (INTERNAL_ERROR): both are the server failing, and both are seen here.
	do := func(method, url, body string) (int, string, error) {
		req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	serverFailed := func(what string, code int, body string, err error, began time.Time) {
		t.Helper()
		t.Logf("%s with etcd paused: %d after %s: %s %v", what, code, time.Since(began).Round(time.Millisecond), body, err)
		if err != nil {
			assert.Contains(t, err.Error(), "INTERNAL_ERROR", "a transport failure other than the server's stream reset")
			return
		}
		assert.GreaterOrEqual(t, code, 500)
	}

	require.NoError(t, s.PauseEtcd())
	defer func() { assert.NoError(t, s.ResumeEtcd()) }()

	began := time.Now()
	code, body, err := do(http.MethodGet, base+"?timeout=2s", "")
	serverFailed("consistent LIST", code, body, err, began)

	began = time.Now()
	code, body, err = do(http.MethodPost, base+"?timeout=2s", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"}}`)
	serverFailed("create", code, body, err, began)

	code, _, err = do(http.MethodGet, base+"?resourceVersion=0", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "LIST at resourceVersion=0 comes from the watch cache")
}

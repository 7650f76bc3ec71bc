package apiserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The HA harness's controls, each on the real processes: the load balancer reaches every
// kube-apiserver, the etcd leader can be killed and another takes over, a kube-apiserver cut
// off from etcd stops being ready (and the load balancer counts it down) while it still
// answers, and a reload leaves a backend out.
func TestHAControlPlane(t *testing.T) {
	h := RequireHA(t, HAOptions{})
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(h.RESTConfig())
	require.NoError(t, err)
	cms := cs.CoreV1().ConfigMaps("default")
	put := func(name string) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	require.NoError(t, put("through-the-balancer"))
	for i := range h.APIServers() {
		direct, err := kubernetes.NewForConfig(h.APIServerRESTConfig(i))
		require.NoError(t, err)
		_, err = direct.CoreV1().ConfigMaps("default").Get(ctx, "through-the-balancer", metav1.GetOptions{})
		require.NoError(t, err, "kube-apiserver %d sees the same etcd", i)
	}
	sessions, err := h.BackendSessions(ctx)
	require.NoError(t, err)
	assert.Len(t, sessions, h.APIServers())

	t.Run("etcd leader killed", func(t *testing.T) {
		leader, err := h.WaitEtcdLeader(ctx, 30*time.Second)
		require.NoError(t, err)
		require.NoError(t, h.KillEtcdMember(leader))
		next, err := h.WaitEtcdLeader(ctx, 30*time.Second)
		require.NoError(t, err)
		assert.NotEqual(t, leader, next)
		require.Eventually(t, func() bool { return put("after-leader-loss") == nil }, 30*time.Second, 200*time.Millisecond)
		require.NoError(t, h.StartEtcdMember(ctx, leader))
	})

	t.Run("kube-apiserver isolated from etcd", func(t *testing.T) {
		hc, err := h.HTTPClient()
		require.NoError(t, err)
		status := func(url string) int {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			c := *hc
			c.Timeout = 5 * time.Second
			resp, err := c.Do(req)
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		h.IsolateAPIServer(1)
		defer h.RejoinAPIServer(1)
		require.Eventually(t, func() bool { return status(h.APIServerURL(1)+"/readyz") == http.StatusInternalServerError },
			60*time.Second, 500*time.Millisecond, "/readyz fails without etcd")
		// Still serving: the watch cache answers a LIST at resourceVersion 0 without etcd.
		assert.Equal(t, http.StatusOK, status(h.APIServerURL(1)+"/api/v1/namespaces/default/configmaps?resourceVersion=0"))
		require.Eventually(t, func() bool {
			st, err := h.lb.stats(ctx)
			// HAProxy's status is "UP", "UP 1/2" while it fails checks, then "DOWN" (or
			// "DOWN 1/2" on the way back up).
			return err == nil && strings.HasPrefix(st["api1"].status, "DOWN")
		}, 30*time.Second, 200*time.Millisecond, "the load balancer counts it down")
		// The others still write. (Not through the balancer: this client's one HTTP/2
		// connection may be the isolated kube-apiserver's, and the balancer leaves open
		// connections where they are.)
		direct, err := kubernetes.NewForConfig(h.APIServerRESTConfig(0))
		require.NoError(t, err)
		_, err = direct.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "while-isolated"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		h.RejoinAPIServer(1)
		require.NoError(t, h.WaitBackendsUp(ctx, 60*time.Second))
	})

	t.Run("reload without a backend, then a restart", func(t *testing.T) {
		require.NoError(t, h.ReloadLoadBalancer(ctx, 2))
		st, err := h.lb.stats(ctx)
		require.NoError(t, err)
		assert.NotContains(t, st, "api2")
		assert.Len(t, st, h.APIServers()-1)
		require.NoError(t, h.RestartAPIServer(ctx, 0))
		require.Eventually(t, func() bool { return put("after-restart") == nil }, 30*time.Second, 200*time.Millisecond)
		rev, err := h.Revision(context.Background())
		require.NoError(t, err)
		assert.Positive(t, rev)
	})
}

package apiserver

import (
	"net/http"
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

	"github.com/rewatch/rewatch/internal/faultproxy"
)

// The fault proxy in front of the real server: client-go sees injected
// faults exactly as it would see the server's own.
func TestFaultProxyInFrontOfRealServer(t *testing.T) {
	s := RequireServer(t, Options{})
	tr, err := rest.TransportFor(s.RESTConfig())
	require.NoError(t, err)
	p, err := faultproxy.New(faultproxy.Config{Upstream: s.URL(), Transport: tr, ForceJSON: true})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	// The proxy's transport carries TLS and the token; the client talks
	// plain HTTP to the proxy.
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: p.URL(), QPS: -1})
	require.NoError(t, err)
	ctx := t.Context()
	newNamespace(t, cs, "proxied")
	cms := cs.CoreV1().ConfigMaps("proxied")

	list, err := cms.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.WatchError(faultproxy.TooManyRequests(3)).AfterEvents(1)})
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	ev := recv(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	ev = recv(t, w)
	require.Equal(t, watch.Error, ev.Type)
	err = apierrors.FromObject(ev.Object)
	assert.True(t, apierrors.IsTooManyRequests(err), "%v", err)
	secs, ok := apierrors.SuggestsClientDelay(err)
	assert.True(t, ok)
	assert.Equal(t, 3, secs)
	_, open := <-w.ResultChan()
	assert.False(t, open, "the stream ends after the ERROR event")

	// 429 at watch start, with a Retry-After header.
	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.Respond(faultproxy.TooManyRequests(0)).WithHeader("Retry-After", "1")})
	hc := &http.Client{Transport: http.DefaultTransport}
	resp, err := hc.Get(p.URL() + "/api/v1/namespaces/proxied/configmaps?watch=1&resourceVersion=" + list.ResourceVersion)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))

	// A reset mid-stream ends client-go's watch without an event.
	p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, Fault: faultproxy.Reset().AfterEvents(1)})
	w2, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	defer w2.Stop()
	assert.Equal(t, watch.Added, recv(t, w2).Type)
	_, open = <-w2.ResultChan()
	assert.False(t, open)

	lists, watches := p.Counts()
	assert.Equal(t, 1, lists)
	assert.Equal(t, 3, watches)
	for _, r := range p.Requests() {
		if r.Kind == faultproxy.Watch {
			assert.Equal(t, list.ResourceVersion, r.ResourceVersion)
		}
	}
}

func recv(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "watch closed")
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event in 30s")
	}
	return watch.Event{}
}

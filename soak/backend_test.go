package soak

import (
	"context"

	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/sim"
)

// backend is an API server the soak runs against; copied in small from e2e/backend_test.go
// (test helpers cannot be imported), configmaps only.
type backend interface {
	name() string
	url() string
	transport() http.RoundTripper
	ensureNamespace(ctx context.Context, ns string) error
	put(ctx context.Context, ns, name, value string) error
	del(ctx context.Context, ns, name string) error
	// list is a fresh LIST of the server: key → resourceVersion.
	list(ctx context.Context, ns string) (map[string]string, error)
}

// ---- simulator ----

type simBackend struct {
	s *sim.Server
	u string
}

func newSimBackend(t *testing.T) *simBackend {
	s := sim.New(sim.Options{BookmarkInterval: 2 * time.Second, TooLargeWait: 50 * time.Millisecond})
	u, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return &simBackend{s: s, u: u}
}

func (b *simBackend) name() string                                  { return "sim" }
func (b *simBackend) url() string                                   { return b.u }
func (b *simBackend) transport() http.RoundTripper                  { return http.DefaultTransport }
func (b *simBackend) ensureNamespace(context.Context, string) error { return nil }

func (b *simBackend) put(_ context.Context, ns, name, value string) error {
	data := map[string]string{"v": value}
	if _, ok := b.s.Snapshot(sim.ConfigMaps)[ns+"/"+name]; ok {
		_, err := b.s.Update(sim.ConfigMaps, ns, name, data)
		return err
	}
	_, err := b.s.Create(sim.ConfigMaps, ns, name, data)
	return err
}

func (b *simBackend) del(_ context.Context, ns, name string) error {
	_, err := b.s.Delete(sim.ConfigMaps, ns, name)
	return err
}

func (b *simBackend) list(_ context.Context, ns string) (map[string]string, error) {
	out := map[string]string{}
	for k, v := range b.s.Snapshot(sim.ConfigMaps) {
		if strings.HasPrefix(k, ns+"/") {
			out[k] = v
		}
	}
	return out, nil
}

// ---- real kube-apiserver ----

type realBackend struct {
	s  *apiserver.Server
	cs *kubernetes.Clientset
	rt http.RoundTripper
}

var (
	realOnce   sync.Once
	realShared *realBackend
	realErr    error
	realStop   func()
)

// sharedReal starts one real server for the package; it fails under CI=true when the server
// cannot be had and skips elsewhere (as e2e's requireOrSkip does).
func sharedReal(t *testing.T) *realBackend {
	t.Helper()
	realOnce.Do(func() { realShared, realErr = startReal(t) })
	if realErr != nil {
		if ci() {
			t.Fatalf("real kube-apiserver unavailable under CI: %v", realErr)
		}
		t.Skipf("real kube-apiserver unavailable (run scripts/build-apiserver.sh): %v", realErr)
	}
	return realShared
}

func startReal(t *testing.T) (*realBackend, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := apiserver.EnsureBuilt(ctx); err != nil {
		return nil, err
	}
	s, err := apiserver.Start(ctx, apiserver.Options{})
	if err != nil {
		return nil, err
	}
	realStop = s.Stop
	rc := rest.CopyConfig(s.RESTConfig())
	// The writers must not be slowed by client-go's default 5 QPS limiter.
	rc.QPS, rc.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(s.RESTConfig())
	if err != nil {
		return nil, err
	}
	return &realBackend{s: s, cs: cs, rt: rt}, nil
}

func (b *realBackend) name() string                 { return "kube-apiserver" }
func (b *realBackend) url() string                  { return b.s.URL() }
func (b *realBackend) transport() http.RoundTripper { return b.rt }

func (b *realBackend) ensureNamespace(ctx context.Context, ns string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (b *realBackend) put(ctx context.Context, ns, name, value string) error {
	c := b.cs.CoreV1().ConfigMaps(ns)
	cm, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"v": value}}, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	cm.Data = map[string]string{"v": value}
	_, err = c.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func (b *realBackend) del(ctx context.Context, ns, name string) error {
	return b.cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (b *realBackend) list(ctx context.Context, ns string) (map[string]string, error) {
	l, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range l.Items {
		out[it.Namespace+"/"+it.Name] = it.ResourceVersion
	}
	return out, nil
}

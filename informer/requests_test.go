package informer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rewatch/rewatch/informer"
	"github.com/rewatch/rewatch/sim"
)

// sent is one request as the server received it.
type sent struct {
	watch             bool
	userAgent, accept string
}

// front is a reverse proxy in front of the simulator that records every request, can add a
// Warning header to every response, and can hold the first LIST until its client gives up.
type front struct {
	warning  string
	holdList bool

	mu   sync.Mutex
	reqs []sent
	held atomic.Bool
}

func (f *front) start(t *testing.T, upstream string) string {
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		watch := r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1"
		f.mu.Lock()
		f.reqs = append(f.reqs, sent{watch: watch, userAgent: r.Header.Get("User-Agent"), accept: r.Header.Get("Accept")})
		f.mu.Unlock()
		if f.warning != "" {
			w.Header().Add("Warning", `299 - "`+f.warning+`"`)
		}
		if f.holdList && !watch && f.held.CompareAndSwap(false, true) {
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *front) sent() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.reqs...)
}

func (f *front) watches() int {
	n := 0
	for _, r := range f.sent() {
		if r.watch {
			n++
		}
	}
	return n
}

func (f *front) lists() int {
	n := 0
	for _, r := range f.sent() {
		if !r.watch {
			n++
		}
	}
	return n
}

// way is one of the informer's ways over rewatch's HTTP transport from a client-go
// configuration: from a clientset (the factory's, NewInformerFunc's) and from a rest.Config
// (ForRESTConfig, for controller-runtime). probes is how many requests the way's set-up makes
// through client-go's REST client that never reach the server (ForRESTConfig's probe LIST).
type way struct {
	name   string
	probes int
	build  func(t *testing.T, cfg *rest.Config) cache.SharedIndexInformer
}

var ways = []way{
	{"clientset", 0, func(t *testing.T, cfg *rest.Config) cache.SharedIndexInformer {
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		return informer.ForClientset(cs, &corev1.ConfigMap{}, "default", nil, 0, quiet)
	}},
	{"rest.Config", 1, func(t *testing.T, cfg *rest.Config) cache.SharedIndexInformer {
		managerCfg, newInformer, err := informer.ForRESTConfig(cfg, nil, quiet)
		require.NoError(t, err)
		inf := newInformer(crListWatch(t, managerCfg, "default", ""), &corev1.ConfigMap{}, 0, nil)
		require.IsType(t, &informer.Informer{}, inf)
		return inf
	}},
}

// syncedThrough starts the way's informer over a front of a simulator holding one ConfigMap,
// configured by cfg (its Host set here), and waits until it has synced.
func syncedThrough(t *testing.T, w way, f *front, cfg rest.Config) (cache.SharedIndexInformer, *sim.Server) {
	s, simURL := startSim(t, 1)
	cfg.Host = f.start(t, simURL)
	inf := w.build(t, &cfg)
	run(t, inf)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced), "the informer did not sync")
	require.Eventually(t, func() bool { return f.watches() > 0 }, 30*time.Second, time.Millisecond, "no watch after the sync")
	return inf, s
}

// countingLimiter is a rate limiter that lets every request through and counts the waits.
type countingLimiter struct{ waits atomic.Int32 }

func (c *countingLimiter) TryAccept() bool { return true }
func (c *countingLimiter) Accept()         { c.waits.Add(1) }
func (c *countingLimiter) Stop()           {}
func (c *countingLimiter) QPS() float32    { return 1000 }
func (c *countingLimiter) Wait(context.Context) error {
	c.waits.Add(1)
	return nil
}

// Every LIST waits on the rest.Config's rate limiter, as client-go's REST client's requests do,
// so an informer's LISTs share the program's budget; watches do not wait, as client-go's do not.
func TestRequestsWaitOnTheRESTConfigsRateLimiter(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			limiter := &countingLimiter{}
			f := &front{}
			syncedThrough(t, w, f, rest.Config{RateLimiter: limiter})
			require.Positive(t, f.lists())
			require.Equal(t, int32(f.lists()+w.probes), limiter.waits.Load(), "one wait per LIST, none per watch")
		})
	}
}

// From a clientset, the informer's limiter is its REST client's: the clientset's one token bucket
// of rest.Config's QPS and Burst, or client-go's default of 5 and 10 for the group's client.
func TestClientsetConfigTakesTheRESTClientsRateLimiter(t *testing.T) {
	for _, c := range []struct {
		cfg rest.Config
		qps float32
	}{{rest.Config{QPS: 7, Burst: 3}, 7}, {rest.Config{}, rest.DefaultQPS}} {
		c.cfg.Host = "https://127.0.0.1:6443"
		cs, err := kubernetes.NewForConfig(&c.cfg)
		require.NoError(t, err)
		conn, err := informer.ClientsetConfig(cs, &corev1.ConfigMap{}, "default", nil)
		require.NoError(t, err)
		rc := cs.CoreV1().RESTClient().(*rest.RESTClient)
		require.NotNil(t, conn.RateLimiter)
		require.Same(t, rc.GetRateLimiter(), conn.RateLimiter.(flowcontrol.RateLimiter))
		require.Equal(t, c.qps, rc.GetRateLimiter().QPS())
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443", QPS: -1})
	require.NoError(t, err)
	conn, err := informer.ClientsetConfig(cs, &corev1.ConfigMap{}, "default", nil)
	require.NoError(t, err)
	require.Nil(t, conn.RateLimiter, "a negative QPS turns client-go's limiter off")
}

// A rest.Config whose ContentType is JSON gets JSON, LIST and watch, as client-go's typed
// clients do; left unset, protobuf is asked for first.
func TestRequestsAskForTheRESTConfigsContentType(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			f := &front{}
			syncedThrough(t, w, f, rest.Config{ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
			for _, r := range f.sent() {
				require.True(t, strings.HasPrefix(r.accept, "application/json"), "watch=%v asked for %q", r.watch, r.accept)
				require.NotContains(t, r.accept, "protobuf")
			}
		})
	}
	f := &front{}
	syncedThrough(t, ways[0], f, rest.Config{})
	for _, r := range f.sent() {
		require.True(t, strings.HasPrefix(r.accept, "application/vnd.kubernetes.protobuf"), "watch=%v asked for %q", r.watch, r.accept)
	}
}

// Requests carry the rest.Config's UserAgent, or client-go's default one when it has none, as
// the clientset's and controller-runtime's requests do.
func TestRequestsCarryTheRESTConfigsUserAgent(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			for _, c := range []struct{ set, want string }{
				{"my-controller/1.0", "my-controller/1.0"},
				{"", rest.DefaultKubernetesUserAgent()},
			} {
				f := &front{}
				syncedThrough(t, w, f, rest.Config{UserAgent: c.set})
				for _, r := range f.sent() {
					require.Equal(t, c.want, r.userAgent, "watch=%v", r.watch)
				}
			}
		})
	}
}

// rest.Config's Timeout bounds each LIST, as it bounds client-go's requests: a LIST the server
// holds fails after it and is asked again. It does not cut the watch.
func TestRequestsHonourTheRESTConfigsTimeout(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			f := &front{holdList: true}
			inf, s := syncedThrough(t, w, f, rest.Config{Timeout: 300 * time.Millisecond})
			require.GreaterOrEqual(t, f.lists(), 2, "the held LIST was asked again")
			lists := f.lists()
			time.Sleep(time.Second) // more than three Timeouts with the watch open
			_, err := s.Create(sim.ConfigMaps, "default", "late", nil)
			require.NoError(t, err)
			require.Eventually(t, func() bool { _, ok, _ := inf.GetStore().GetByKey("default/late"); return ok }, 30*time.Second, time.Millisecond)
			require.Equal(t, 1, f.watches(), "the watch was not cut by the Timeout")
			require.Equal(t, lists, f.lists())
		})
	}
}

// warnings records the Warning headers it is given.
type warnings struct {
	mu    sync.Mutex
	texts []string
}

func (r *warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if code == 299 {
		r.texts = append(r.texts, text)
	}
}

func (r *warnings) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.texts...)
}

// The server's warnings go to the rest.Config's warning handler, from LISTs and watches, as
// client-go's REST client gives them.
func TestResponseWarningsGoToTheRESTConfigsHandler(t *testing.T) {
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			got := &warnings{}
			f := &front{warning: "v1 ConfigMap is going away"}
			syncedThrough(t, w, f, rest.Config{WarningHandlerWithContext: got})
			// The watch's warning is handed over once its response headers are in.
			require.Eventually(t, func() bool { return len(got.get()) == len(f.sent()) }, 30*time.Second, time.Millisecond,
				"one warning per response: %d warnings, %d responses", len(got.get()), len(f.sent()))
			for _, text := range got.get() {
				require.Equal(t, "v1 ConfigMap is going away", text)
			}
		})
	}
}

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/loopback"
)

// HAOptions configures StartHA.
type HAOptions struct {
	// BinDir holds kube-apiserver and etcd; empty means BinDir(). HAProxy is looked up on
	// PATH (scripts/install-packages.sh installs it).
	BinDir string
	// APIServers is how many kube-apiservers run behind the load balancer (default 3).
	APIServers int
	// ExtraArgs are appended to every kube-apiserver's arguments (later flags win).
	ExtraArgs []string
	// Logf, when set, receives progress messages.
	Logf func(format string, args ...any)
}

// HA is the control plane of kubeadm's high-availability topology on loopback: a three-member
// etcd cluster, several kube-apiservers over it, each with its own watch cache, and HAProxy in
// TCP mode in front of them, checking each one's /readyz. Each kube-apiserver reaches each
// etcd member through a gate of its own (a TCP relay), so that one kube-apiserver can be cut
// off from etcd while it keeps serving (IsolateAPIServer).
type HA struct {
	opts HAOptions
	dir  string
	pki  *pki

	etcd []*etcdMember
	apis []*haAPIServer
	lb   *loadBalancer

	mu       sync.Mutex // guards the procs of etcd and apis, and stopped
	stopped  bool
	stopOnce sync.Once
}

type etcdMember struct {
	name, clientURL string
	args            []string
	proc            *proc
}

type haAPIServer struct {
	name  string
	url   string
	port  int
	gates []*gate // one per etcd member, in order
	args  []string
	proc  *proc
}

// StartHA starts the cluster and returns once every kube-apiserver answers /readyz and the
// load balancer counts each one up. The caller must Stop it.
func StartHA(ctx context.Context, opts HAOptions) (*HA, error) {
	if opts.BinDir == "" {
		opts.BinDir = BinDir()
	}
	if opts.APIServers <= 0 {
		opts.APIServers = 3
	}
	if !haveBinaries(opts.BinDir) {
		return nil, fmt.Errorf("kube-apiserver and etcd not found in %s (run scripts/build-apiserver.sh)", opts.BinDir)
	}
	haproxy, err := findHAProxy()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rewatch-ha-")
	if err != nil {
		return nil, err
	}
	h := &HA{opts: opts, dir: dir}
	if err := h.start(ctx, haproxy); err != nil {
		h.Stop()
		return nil, err
	}
	return h, nil
}

func (h *HA) logf(format string, args ...any) {
	if h.opts.Logf != nil {
		h.opts.Logf(format, args...)
	}
}

func (h *HA) start(ctx context.Context, haproxy string) error {
	started := time.Now()
	var err error
	if h.pki, err = newPKI(h.dir); err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	if err := h.startEtcd(ctx); err != nil {
		return err
	}
	h.logf("apiserver: etcd cluster of %d healthy after %s", len(h.etcd), time.Since(started).Round(time.Millisecond))

	ports, err := loopback.FreePorts(h.opts.APIServers + 1)
	if err != nil {
		return err
	}
	for i := range h.opts.APIServers {
		a := &haAPIServer{name: fmt.Sprintf("kube-apiserver-%d", i), port: ports[i]}
		a.url = "https://127.0.0.1:" + strconv.Itoa(a.port)
		var servers []string
		for _, m := range h.etcd {
			g, err := newGate(strings.TrimPrefix(m.clientURL, "http://"))
			if err != nil {
				return err
			}
			a.gates = append(a.gates, g)
			servers = append(servers, "http://"+g.addr())
		}
		a.args = append(apiServerArgs(h.pki, strings.Join(servers, ","), a.port, filepath.Join(h.dir, a.name+"-certs"), 0), h.opts.ExtraArgs...)
		h.apis = append(h.apis, a)
	}
	// All at once: a kubeadm cluster's control-plane nodes bootstrap concurrently too.
	errs := make([]error, len(h.apis))
	var wg sync.WaitGroup
	for i := range h.apis {
		wg.Go(func() { errs[i] = h.StartAPIServer(ctx, i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	hc, err := h.HTTPClient()
	if err != nil {
		return err
	}
	if err := bindLimitedUser(ctx, hc, h.apis[0].url); err != nil {
		return err
	}

	if err := h.startLoadBalancer(ctx, haproxy, ports[len(ports)-1]); err != nil {
		return err
	}
	if err := h.WaitBackendsUp(ctx, 30*time.Second); err != nil {
		return err
	}
	h.logf("apiserver: %d kube-apiservers behind HAProxy on %s after %s", len(h.apis), h.URL(), time.Since(started).Round(time.Millisecond))
	return nil
}

// startLoadBalancer starts HAProxy on port. Its port is handed to no one before it listens,
// so a port taken in the meantime (see loopback.Listen) is replaced by another, up to three times.
func (h *HA) startLoadBalancer(ctx context.Context, haproxy string, port int) error {
	for attempt := 1; ; attempt++ {
		h.lb = &loadBalancer{bin: haproxy, dir: h.dir, port: port, logf: h.logf}
		err := h.lb.start(ctx, h.backends(nil))
		if err == nil {
			return nil
		}
		h.lb.stop()
		if attempt == 3 || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
		h.logf("apiserver: haproxy's port %d was taken meanwhile; another", port)
		ports, perr := loopback.FreePorts(1)
		if perr != nil {
			return errors.Join(err, perr)
		}
		port = ports[0]
	}
}

// backends lists the kube-apiservers for the load balancer's configuration, leaving out the
// indices in without.
func (h *HA) backends(without []int) []lbBackend {
	var out []lbBackend
	for i, a := range h.apis {
		if !slices.Contains(without, i) {
			out = append(out, lbBackend{Name: fmt.Sprintf("api%d", i), Addr: "127.0.0.1:" + strconv.Itoa(a.port)})
		}
	}
	return out
}

// URL is the load balancer's address: what clients use.
func (h *HA) URL() string { return h.lb.url() }

// APIServers is how many kube-apiservers run.
func (h *HA) APIServers() int { return len(h.apis) }

// APIServerURL is kube-apiserver i's own address, bypassing the load balancer.
func (h *HA) APIServerURL(i int) string { return h.apis[i].url }

// Token is a bearer token of a system:masters user.
func (h *HA) Token() string { return h.pki.adminToken }

// LimitedToken is a bearer token of LimitedUser, who may only read.
func (h *HA) LimitedToken() string { return h.pki.limitToken }

// CAData is the PEM CA certificate that signed every kube-apiserver's serving certificate.
func (h *HA) CAData() []byte { return h.pki.caPEM }

// RESTConfig reaches the load balancer as a system:masters user, with client-side rate
// limiting off.
func (h *HA) RESTConfig() *rest.Config { return h.restConfig(h.URL(), h.pki.adminToken) }

// LimitedRESTConfig is RESTConfig for LimitedToken.
func (h *HA) LimitedRESTConfig() *rest.Config { return h.restConfig(h.URL(), h.pki.limitToken) }

// APIServerRESTConfig reaches kube-apiserver i directly, as a system:masters user.
func (h *HA) APIServerRESTConfig(i int) *rest.Config {
	return h.restConfig(h.apis[i].url, h.pki.adminToken)
}

func (h *HA) restConfig(url, token string) *rest.Config {
	return &rest.Config{Host: url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: h.pki.caPEM}, QPS: -1}
}

// HTTPClient is an *http.Client of a system:masters user; it verifies every kube-apiserver's
// certificate and so works for the load balancer and for each kube-apiserver alike.
func (h *HA) HTTPClient() (*http.Client, error) {
	return rest.HTTPClientFor(h.restConfig("https://127.0.0.1", h.pki.adminToken))
}

// launch starts bin with args as the process in *slot (one of the etcd members' or the
// kube-apiservers'), unless the cluster is stopped or *slot already runs.
func (h *HA) launch(slot **proc, name, bin string, args []string) (*proc, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, errors.New("cluster stopped")
	}
	if *slot != nil {
		return nil, fmt.Errorf("%s is running", name)
	}
	p, err := startProc(name, bin, args, h.dir)
	if err != nil {
		return nil, err
	}
	*slot = p
	return p, nil
}

// take empties *slot and returns the process it held (nil if none), for the caller to end.
func (h *HA) take(slot **proc) *proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := *slot
	*slot = nil
	return p
}

// StopAPIServer stops kube-apiserver i (SIGTERM, then SIGKILL after 10 s); its open
// connections end. The load balancer notices by its health checks.
func (h *HA) StopAPIServer(i int) {
	if p := h.take(&h.apis[i].proc); p != nil {
		p.stop(10 * time.Second)
	}
}

// StartAPIServer starts kube-apiserver i (again) on its port and returns once it answers
// /readyz; the load balancer counts it up a moment later (WaitBackendsUp).
func (h *HA) StartAPIServer(ctx context.Context, i int) error {
	began := time.Now()
	a := h.apis[i]
	p, err := h.launch(&a.proc, a.name, filepath.Join(h.opts.BinDir, "kube-apiserver"), a.args)
	if err != nil {
		return err
	}
	hc, err := h.HTTPClient()
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, p, hc, a.url+"/readyz", 120*time.Second); err != nil {
		return fmt.Errorf("%s did not become ready: %w\n%s", a.name, err, p.logTail(40))
	}
	h.logf("apiserver: %s ready in %s", a.name, time.Since(began).Round(time.Millisecond))
	return nil
}

// RestartAPIServer stops kube-apiserver i and starts it again, as a rolling upgrade does to
// each in turn: its watch cache starts afresh. It returns once the load balancer counts it
// up again.
func (h *HA) RestartAPIServer(ctx context.Context, i int) error {
	h.StopAPIServer(i)
	if err := h.StartAPIServer(ctx, i); err != nil {
		return err
	}
	return h.WaitBackendsUp(ctx, 30*time.Second)
}

// IsolateAPIServer cuts kube-apiserver i off from etcd: every byte between them is held, and
// every connection stays open. It keeps serving what it can without etcd — its watch cache
// stops moving — until its own etcd health check fails /readyz and the load balancer stops
// sending it new connections; connections already open stay with it.
func (h *HA) IsolateAPIServer(i int) {
	for _, g := range h.apis[i].gates {
		g.freeze()
	}
	h.logf("apiserver: %s cut off from etcd", h.apis[i].name)
}

// RejoinAPIServer undoes IsolateAPIServer.
func (h *HA) RejoinAPIServer(i int) {
	for _, g := range h.apis[i].gates {
		g.thaw()
	}
	h.logf("apiserver: %s reaches etcd again", h.apis[i].name)
}

// ReloadLoadBalancer reloads HAProxy with a configuration that leaves out the kube-apiservers
// in without, as an operator removing a control-plane node does. The old worker process keeps
// the connections it holds for at most the configuration's hard-stop-after (5 s) and then
// closes them; new connections go to the backends left. It returns once the new worker runs.
func (h *HA) ReloadLoadBalancer(ctx context.Context, without ...int) error {
	return h.lb.reload(ctx, h.backends(without))
}

// WaitBackendsUp waits until the load balancer counts every backend in its configuration up.
func (h *HA) WaitBackendsUp(ctx context.Context, timeout time.Duration) error {
	return h.lb.waitUp(ctx, timeout)
}

// BackendSessions is the number of connections the load balancer holds open to each backend
// of its current configuration, by backend name (api0, api1, ...).
func (h *HA) BackendSessions(ctx context.Context) (map[string]int, error) {
	st, err := h.lb.stats(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for name, s := range st {
		out[name] = s.sessions
	}
	return out, nil
}

// CPUSeconds is the CPU time kube-apiserver i's current process has used.
func (h *HA) CPUSeconds(i int) (float64, error) {
	h.mu.Lock()
	p := h.apis[i].proc
	h.mu.Unlock()
	if p == nil || p.cmd.Process == nil {
		return 0, fmt.Errorf("%s is not running", h.apis[i].name)
	}
	return procCPUSeconds(p.cmd.Process.Pid)
}

// Stop ends every process and gate (waiting until they are gone) and removes the temporary
// directory. It is safe to call more than once.
func (h *HA) Stop() {
	h.stopOnce.Do(func() {
		h.mu.Lock()
		h.stopped = true
		h.mu.Unlock()
		if h.lb != nil {
			h.lb.stop()
		}
		var wg sync.WaitGroup
		for i := range h.apis {
			wg.Go(func() { h.StopAPIServer(i) })
		}
		wg.Wait()
		for _, a := range h.apis {
			for _, g := range a.gates {
				_ = g.close()
			}
		}
		for i := range h.etcd {
			wg.Go(func() { h.StopEtcdMember(i) })
		}
		wg.Wait()
		if h.dir != "" {
			_ = os.RemoveAll(h.dir)
		}
		h.logf("apiserver: HA cluster stopped")
	})
}

// Package apiserver runs a real kube-apiserver backed by a real etcd on
// loopback ports for end-to-end tests, and provokes the server's genuine
// failure modes: 429 from --max-requests-inflight, 410 from etcd
// compaction, InternalErrors and timeouts from a paused etcd.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rewatch/rewatch/internal/loopback"
)

// LimitedUser is the user behind Server.LimitedToken: not in
// system:masters (so max-inflight limits apply to it), allowed to get, list
// and watch everything and to write nothing.
const LimitedUser = "rewatch-limited"

// Options configures Start.
type Options struct {
	// BinDir holds kube-apiserver and etcd; empty means BinDir().
	BinDir string
	// MaxRequestsInflight > 0 sets --max-requests-inflight and turns off
	// API Priority and Fairness, so that the classic in-flight limiter sends
	// real 429s. It never applies to system:masters or to watches: use the
	// limited token and non-watch requests to hit it.
	MaxRequestsInflight int
	// ExtraArgs are appended to kube-apiserver's arguments (later flags win).
	ExtraArgs []string
	// Logf, when set, receives progress messages.
	Logf func(format string, args ...any)
}

// Server is a running etcd and kube-apiserver pair.
type Server struct {
	opts     Options
	dir      string
	pki      *pki
	etcdURL  string
	etcdPeer string
	url      string
	apiArgs  []string
	bin      string

	mu   sync.Mutex // guards etcd and api, swapped by RestartAPIServer
	etcd *proc
	api  *proc

	stopOnce sync.Once
	stopped  bool // under mu; a restart after Stop would leak a process
}

// Start runs etcd and kube-apiserver and returns once /readyz answers ok.
// The caller must Stop the server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.BinDir == "" {
		opts.BinDir = BinDir()
	}
	if !haveBinaries(opts.BinDir) {
		return nil, fmt.Errorf("kube-apiserver and etcd not found in %s (run scripts/build-apiserver.sh)", opts.BinDir)
	}
	dir, err := os.MkdirTemp("", "rewatch-apiserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, dir: dir}
	if err := s.start(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

func (s *Server) start(ctx context.Context) error {
	started := time.Now()
	var err error
	if s.pki, err = newPKI(s.dir); err != nil {
		return fmt.Errorf("generate certificates: %w", err)
	}
	ports, err := loopback.FreePorts(3)
	if err != nil {
		return err
	}
	s.etcdURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
	s.etcdPeer = "http://127.0.0.1:" + strconv.Itoa(ports[1])
	s.url = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if err := s.startEtcd(ctx); err != nil {
		return err
	}
	s.logf("apiserver: etcd healthy on %s after %s", s.etcdURL, time.Since(started).Round(time.Millisecond))

	s.bin = filepath.Join(s.opts.BinDir, "kube-apiserver")
	s.apiArgs = apiServerArgs(s.pki, s.etcdURL, ports[2], filepath.Join(s.dir, "certs"), s.opts.MaxRequestsInflight)
	s.apiArgs = append(s.apiArgs, s.opts.ExtraArgs...)
	if err := s.startAPI(ctx); err != nil {
		return err
	}
	if err := s.bindLimitedUser(ctx); err != nil {
		return err
	}
	s.logf("apiserver: ready on %s after %s", s.url, time.Since(started).Round(time.Millisecond))
	return nil
}

// startEtcd starts etcd on the server's ports with the data in its directory, and returns once
// it is healthy.
func (s *Server) startEtcd(ctx context.Context) error {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return errors.New("server stopped")
	}
	etcd, err := startProc("etcd", filepath.Join(s.opts.BinDir, "etcd"), []string{
		"--name=default",
		"--data-dir=" + filepath.Join(s.dir, "etcd"),
		"--listen-client-urls=" + s.etcdURL,
		"--advertise-client-urls=" + s.etcdURL,
		"--listen-peer-urls=" + s.etcdPeer,
		"--initial-advertise-peer-urls=" + s.etcdPeer,
		"--initial-cluster=default=" + s.etcdPeer,
		"--log-level=warn",
		// Durability is worthless for a throwaway test store, and fsync is
		// most of etcd's write latency.
		"--unsafe-no-fsync",
	}, s.dir)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.etcd = etcd
	s.mu.Unlock()
	if err := waitHTTP(ctx, etcd, http.DefaultClient, s.etcdURL+"/health", 30*time.Second); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w\n%s", err, etcd.logTail(30))
	}
	return nil
}

func (s *Server) startAPI(ctx context.Context) error {
	began := time.Now()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return errors.New("server stopped")
	}
	api, err := startProc("kube-apiserver", s.bin, s.apiArgs, s.dir)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.api = api
	s.mu.Unlock()
	hc, err := s.HTTPClient()
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, api, hc, s.url+"/readyz", 90*time.Second); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, api.logTail(40))
	}
	s.logf("apiserver: kube-apiserver ready in %s", time.Since(began).Round(time.Millisecond))
	return nil
}

// apiServerArgs are kube-apiserver's flags for serving on the loopback port with p's
// certificates and tokens, over the etcd client URLs etcdServers (comma-separated).
func apiServerArgs(p *pki, etcdServers string, port int, certDir string, maxRequestsInflight int) []string {
	args := []string{
		"--etcd-servers=" + etcdServers,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + p.certFile,
		"--tls-private-key-file=" + p.keyFile,
		"--token-auth-file=" + p.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + p.saKeyFile,
		"--service-account-signing-key-file=" + p.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The default reconciler writes this host's address into the
		// kubernetes Service endpoints and fails on loopback.
		"--endpoint-reconciler-type=none",
		// Without it, an open watch holds a graceful shutdown (Stop,
		// RestartAPIServer) for the HTTP server's full 60 s timeout.
		"--shutdown-watch-termination-grace-period=1s",
		"--v=0",
	}
	if maxRequestsInflight > 0 {
		args = append(args,
			"--max-requests-inflight="+strconv.Itoa(maxRequestsInflight),
			// With APF on, the flag only sizes APF's shared pool, and
			// requests queue instead of being rejected.
			"--enable-priority-and-fairness=false")
	}
	return args
}

// waitHTTP polls url until it answers 200, the process exits, or the
// timeout or ctx ends.
func waitHTTP(ctx context.Context, p *proc, hc *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// URL is the API server's base URL (https://127.0.0.1:port).
func (s *Server) URL() string { return s.url }

// Token is a bearer token of a system:masters user.
func (s *Server) Token() string { return s.pki.adminToken }

// LimitedToken is a bearer token of LimitedUser, who may only read.
func (s *Server) LimitedToken() string { return s.pki.limitToken }

// CAData is the PEM CA certificate that signed the serving certificate.
func (s *Server) CAData() []byte { return s.pki.caPEM }

// EtcdURL is etcd's client URL (plain HTTP on loopback).
func (s *Server) EtcdURL() string { return s.etcdURL }

// RESTConfig authenticates with Token and verifies TLS against CAData.
// Client-side rate limiting is off so tests see the server's own limits.
func (s *Server) RESTConfig() *rest.Config {
	return s.restConfig(s.pki.adminToken)
}

// LimitedRESTConfig is RESTConfig for LimitedToken.
func (s *Server) LimitedRESTConfig() *rest.Config {
	return s.restConfig(s.pki.limitToken)
}

func (s *Server) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            s.url,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.pki.caPEM},
		QPS:             -1,
	}
}

// HTTPClient is an *http.Client for RESTConfig.
func (s *Server) HTTPClient() (*http.Client, error) {
	return rest.HTTPClientFor(s.RESTConfig())
}

// Stop ends both processes (waiting until they are reaped) and removes the
// temporary directory. It is safe to call more than once.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		api, etcd := s.api, s.etcd
		s.mu.Unlock()
		if etcd != nil {
			// A paused etcd would stall the API server's shutdown (it
			// removes its lease) until the kill.
			_ = etcd.signal(syscall.SIGCONT)
		}
		if api != nil {
			api.stop(10 * time.Second)
		}
		if etcd != nil {
			etcd.stop(10 * time.Second)
		}
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
		s.logf("apiserver: stopped")
	})
}

// PauseEtcd freezes etcd with SIGSTOP: requests that need etcd (writes,
// consistent LISTs) hang until their timeout and then fail with a real 504
// (reason Timeout; measured with ?timeout=2s, the default is 60 s). Requests
// the watch cache answers (resourceVersion=0, watches) keep working.
func (s *Server) PauseEtcd() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etcd == nil {
		return errors.New("etcd not started")
	}
	return s.etcd.signal(syscall.SIGSTOP)
}

// ResumeEtcd undoes PauseEtcd.
func (s *Server) ResumeEtcd() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.etcd == nil {
		return errors.New("etcd not started")
	}
	return s.etcd.signal(syscall.SIGCONT)
}

// RestartAPIServer stops kube-apiserver and starts it again on the same
// port with the same etcd, so open watches end and the watch cache starts
// afresh. It returns once /readyz answers ok.
func (s *Server) RestartAPIServer(ctx context.Context) error {
	s.mu.Lock()
	api := s.api
	s.mu.Unlock()
	if api != nil {
		api.stop(10 * time.Second)
	}
	return s.startAPI(ctx)
}

// RecreateCluster deletes the cluster and creates another at the same address: kube-apiserver
// and etcd are stopped, etcd's data is wiped, and both start again on the same ports — a
// cluster deleted and created again where its clients know it (minikube's, kind's on a fixed
// port, an in-cluster service address). The new etcd counts revisions from 1 again, and every
// object is new (new uids), but for those kube-apiserver creates itself. The credentials stay
// valid (the same certificates and tokens), as a kubeconfig rewritten for the new cluster would
// be. It returns once /readyz answers ok and the limited user is bound again.
func (s *Server) RecreateCluster(ctx context.Context) error {
	s.mu.Lock()
	api, etcd := s.api, s.etcd
	s.mu.Unlock()
	if api != nil {
		api.stop(10 * time.Second)
	}
	if etcd != nil {
		_ = etcd.signal(syscall.SIGCONT)
		etcd.stop(10 * time.Second)
	}
	if err := os.RemoveAll(filepath.Join(s.dir, "etcd")); err != nil {
		return err
	}
	if err := s.startEtcd(ctx); err != nil {
		return err
	}
	if err := s.startAPI(ctx); err != nil {
		return err
	}
	if err := s.bindLimitedUser(ctx); err != nil {
		return err
	}
	s.logf("apiserver: cluster created again on %s", s.url)
	return nil
}

// CPUSeconds is the CPU time (user + system) kube-apiserver's current process has used, from
// /proc; after RestartAPIServer it counts the new process only.
func (s *Server) CPUSeconds() (float64, error) {
	s.mu.Lock()
	api := s.api
	s.mu.Unlock()
	if api == nil || api.cmd.Process == nil {
		return 0, fmt.Errorf("kube-apiserver is not running")
	}
	return procCPUSeconds(api.cmd.Process.Pid)
}

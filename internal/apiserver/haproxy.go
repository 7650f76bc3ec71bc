package apiserver

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// findHAProxy looks for haproxy on PATH and where Debian's package puts it (/usr/sbin is not
// on every user's PATH).
func findHAProxy() (string, error) {
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if fi, err := os.Stat("/usr/sbin/haproxy"); err == nil && fi.Mode()&0o111 != 0 {
		return "/usr/sbin/haproxy", nil
	}
	return "", errors.New("haproxy not found (run scripts/install-packages.sh)")
}

// HAProxyAvailable reports whether the HA harness can find HAProxy.
func HAProxyAvailable() error {
	_, err := findHAProxy()
	return err
}

// lbBackend is one server line of the configuration (its fields exported for the template).
type lbBackend struct{ Name, Addr string }

// haproxyConfig follows kubeadm's high-availability guide: TCP mode (TLS passes through to
// the kube-apiservers), round robin, and an HTTPS health check of /readyz on each. Checks
// every 500 ms, two in a row to change a backend's state, so that a stopped kube-apiserver is
// out within about a second and a returned one in within about a second of being ready.
// Idle timeouts of 10 minutes, longer than any watch a client opens, as production load
// balancers in front of kube-apiservers are set, so that the balancer itself ends no watch.
// hard-stop-after: on a reload the old worker closes the connections it still holds after 5 s,
// so that they move to the new configuration's backends.
var haproxyConfig = template.Must(template.New("haproxy.cfg").Parse(`global
    stats socket {{.Socket}} mode 600 level admin
    hard-stop-after 5s

defaults
    mode tcp
    timeout connect 5s
    timeout client 10m
    timeout server 10m
    timeout check 2s

frontend kube-apiserver
    bind 127.0.0.1:{{.Port}}
    default_backend kube-apiservers

backend kube-apiservers
    balance roundrobin
    option httpchk
    http-check connect ssl
    http-check send meth GET uri /readyz
    http-check expect status 200
    default-server inter 500ms fall 2 rise 2 verify none
{{- range .Backends}}
    server {{.Name}} {{.Addr}} check
{{- end}}
`))

// loadBalancer is HAProxy in master-worker mode, run in the foreground so that it is the
// harness's child.
type loadBalancer struct {
	bin  string
	dir  string
	port int
	logf func(string, ...any)
	proc *proc
}

func (lb *loadBalancer) url() string       { return "https://127.0.0.1:" + strconv.Itoa(lb.port) }
func (lb *loadBalancer) config() string    { return filepath.Join(lb.dir, "haproxy.cfg") }
func (lb *loadBalancer) statsSock() string { return filepath.Join(lb.dir, "haproxy-stats.sock") }
func (lb *loadBalancer) masterSock() string {
	return filepath.Join(lb.dir, "haproxy-master.sock")
}

func (lb *loadBalancer) write(backends []lbBackend) error {
	data := struct {
		Socket   string
		Port     int
		Backends []lbBackend
	}{Socket: lb.statsSock(), Port: lb.port, Backends: backends}
	var buf bytes.Buffer
	if err := haproxyConfig.Execute(&buf, data); err != nil {
		return err
	}
	return os.WriteFile(lb.config(), buf.Bytes(), 0o600)
}

func (lb *loadBalancer) start(ctx context.Context, backends []lbBackend) error {
	if err := lb.write(backends); err != nil {
		return err
	}
	// The configuration is checked first, so that a mistake in it says so.
	if out, err := exec.CommandContext(ctx, lb.bin, "-c", "-f", lb.config()).CombinedOutput(); err != nil {
		return fmt.Errorf("haproxy -c: %w\n%s", err, out)
	}
	p, err := startProc("haproxy", lb.bin, []string{"-W", "-db", "-S", lb.masterSock(), "-f", lb.config()}, lb.dir)
	if err != nil {
		return err
	}
	lb.proc = p
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := lb.workerPID(ctx); err == nil {
			if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(lb.port)); err == nil {
				c.Close()
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy did not start listening within 20s\n%s", p.logTail(30))
		}
		select {
		case <-p.exited:
			return fmt.Errorf("haproxy exited: %v\n%s", p.err, p.logTail(30))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// reload rewrites the configuration with backends and reloads HAProxy (SIGUSR2 to the
// master), returning once a new worker runs it.
func (lb *loadBalancer) reload(ctx context.Context, backends []lbBackend) error {
	before, err := lb.workerPID(ctx)
	if err != nil {
		return err
	}
	if err := lb.write(backends); err != nil {
		return err
	}
	if err := lb.proc.signal(syscall.SIGUSR2); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		now, err := lb.workerPID(ctx)
		if err == nil && now != before {
			lb.logf("apiserver: haproxy reloaded with %d backends (worker %d → %d)", len(backends), before, now)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy did not reload within 20s (worker still %d, last error %v)\n%s", before, err, lb.proc.logTail(30))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// command sends one command to a HAProxy CLI socket and returns the answer.
func command(ctx context.Context, sock, cmd string) (string, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return "", err
	}
	// The master CLI answers and closes only once the request side is closed.
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// workerPID is the current worker's process id, from the master CLI's "show proc": the first
// line after "# workers" (old workers come after "# old workers").
func (lb *loadBalancer) workerPID(ctx context.Context) (int, error) {
	out, err := command(ctx, lb.masterSock(), "show proc")
	if err != nil {
		return 0, err
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "# workers") && i+1 < len(lines) {
			f := strings.Fields(lines[i+1])
			if len(f) > 0 {
				return strconv.Atoi(f[0])
			}
		}
	}
	return 0, fmt.Errorf("haproxy show proc: no worker in %q", out)
}

type backendStat struct {
	status   string // UP, DOWN, ...
	sessions int    // connections open now
}

// stats reads the current worker's view of each server of the kube-apiservers backend.
func (lb *loadBalancer) stats(ctx context.Context) (map[string]backendStat, error) {
	out, err := command(ctx, lb.statsSock(), "show stat")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# ")))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("haproxy show stat: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("haproxy show stat: empty")
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	px, sv, status, scur := col["pxname"], col["svname"], col["status"], col["scur"]
	st := map[string]backendStat{}
	for _, rec := range recs[1:] {
		if len(rec) <= max(px, sv, status, scur) || rec[px] != "kube-apiservers" || rec[sv] == "BACKEND" {
			continue
		}
		n, _ := strconv.Atoi(rec[scur])
		st[rec[sv]] = backendStat{status: rec[status], sessions: n}
	}
	return st, nil
}

// waitUp waits until every server of the current configuration is UP.
func (lb *loadBalancer) waitUp(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := lb.stats(ctx)
		up := err == nil && len(st) > 0
		for _, s := range st {
			if !strings.HasPrefix(s.status, "UP") {
				up = false
			}
		}
		if up {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy did not count every backend up within %v: %v (error %v)", timeout, st, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (lb *loadBalancer) stop() {
	if lb.proc != nil {
		lb.proc.stop(10 * time.Second)
	}
}

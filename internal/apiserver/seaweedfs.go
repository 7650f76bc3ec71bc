package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rewatch/rewatch/internal/loopback"
)

// SeaweedFS is a real S3 server for the tests of the persisted cache in object storage:
// SeaweedFS's `weed server` — master, volume server, filer and S3 gateway in one process — on
// loopback, its S3 API signed with one static identity (SeaweedAccessKey, SeaweedSecretKey).
// scripts/build-seaweedfs.sh builds weed from the tools/seaweedfs module into BinDir, as
// scripts/build-apiserver.sh builds kube-apiserver. Its telemetry is off: nothing leaves the
// machine.
type SeaweedFS struct {
	opts  SeaweedOptions
	dir   string
	ports seaweedPorts
	proc  *proc
}

// SeaweedOptions configures StartSeaweedFS.
type SeaweedOptions struct {
	// BinDir holds weed; default BinDir().
	BinDir string
	// Buckets are created at start.
	Buckets []string
	Logf    func(format string, args ...any)
}

// The S3 identity of the test server: every action on every bucket.
const (
	SeaweedAccessKey = "rewatch-test"
	SeaweedSecretKey = "rewatch-test-secret-key-0123456789"
)

type seaweedPorts struct{ master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC int }

// StartSeaweedFS starts SeaweedFS in a directory of its own and waits until its S3 gateway
// answers and its buckets exist.
func StartSeaweedFS(ctx context.Context, o SeaweedOptions) (*SeaweedFS, error) {
	if o.BinDir == "" {
		o.BinDir = BinDir()
	}
	if !haveWeed(o.BinDir) {
		return nil, fmt.Errorf("weed (SeaweedFS) not found in %s (run scripts/build-seaweedfs.sh)", o.BinDir)
	}
	dir, err := os.MkdirTemp("", "rewatch-seaweedfs-")
	if err != nil {
		return nil, err
	}
	p, err := loopback.FreePorts(8)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &SeaweedFS{opts: o, dir: dir, ports: seaweedPorts{p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]}}
	config := `{"identities":[{"name":"rewatch","credentials":[{"accessKey":"` + SeaweedAccessKey + `","secretKey":"` + SeaweedSecretKey +
		`"}],"actions":["Admin","Read","List","Tagging","Write"]}]}`
	if err := os.WriteFile(filepath.Join(dir, "s3.json"), []byte(config), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	for _, b := range o.Buckets {
		if err := s.CreateBucket(ctx, b); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func haveWeed(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "weed"))
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Start starts the process (again, after Stop: the same address, the same data) and waits
// until the S3 gateway answers.
func (s *SeaweedFS) Start(ctx context.Context) error {
	pt := s.ports
	args := []string{"server",
		"-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=" + filepath.Join(s.dir, "data"),
		"-master.port=" + strconv.Itoa(pt.master), "-master.port.grpc=" + strconv.Itoa(pt.masterGRPC),
		"-master.telemetry=false", "-master.volumeSizeLimitMB=256", "-volume.max=16",
		"-volume.port=" + strconv.Itoa(pt.volume), "-volume.port.grpc=" + strconv.Itoa(pt.volumeGRPC),
		"-filer", "-filer.port=" + strconv.Itoa(pt.filer), "-filer.port.grpc=" + strconv.Itoa(pt.filerGRPC),
		"-filer.localSocket=" + filepath.Join(s.dir, "filer.sock"),
		"-s3", "-s3.port=" + strconv.Itoa(pt.s3), "-s3.port.grpc=" + strconv.Itoa(pt.s3GRPC),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + filepath.Join(s.dir, "s3.json"),
		"-s3.localSocket=" + filepath.Join(s.dir, "s3.sock"),
	}
	p, err := startProc("seaweedfs", filepath.Join(s.opts.BinDir, "weed"), args, s.dir)
	if err != nil {
		return err
	}
	s.proc = p
	started := time.Now()
	if err := s.waitS3(ctx, 2*time.Minute); err != nil {
		s.Stop()
		return fmt.Errorf("seaweedfs did not answer: %w\n%s", err, p.logTail(30))
	}
	if s.opts.Logf != nil {
		s.opts.Logf("seaweedfs: S3 at %s in %s", s.Endpoint(), time.Since(started).Round(time.Millisecond))
	}
	return nil
}

// waitS3 waits for the S3 gateway to answer an unsigned request (with 403: it is up) and the
// filer to answer.
func (s *SeaweedFS) waitS3(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		select {
		case <-s.proc.exited:
			return fmt.Errorf("exited: %v", s.proc.err)
		default:
		}
		last = nil
		for _, u := range []string{s.Endpoint() + "/", s.filerURL() + "/"} {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				last = err
				break
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				last = fmt.Errorf("%s: %s", u, resp.Status)
				break
			}
		}
		if last == nil {
			// Up is not yet writable: the volume server registers with the master after the
			// gateway answers. A small file written through the filer says it is.
			last = s.writeProbe(ctx)
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// writeProbe writes a small file through the filer.
func (s *SeaweedFS) writeProbe(ctx context.Context) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.filerURL()+"/.rewatch/ready", strings.NewReader("ready"))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("a write through the filer: %s", resp.Status)
	}
	return nil
}

func (s *SeaweedFS) filerURL() string { return "http://127.0.0.1:" + strconv.Itoa(s.ports.filer) }

// Endpoint is the S3 gateway's URL (plain HTTP on loopback).
func (s *SeaweedFS) Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.ports.s3) }

// CreateBucket makes a bucket: SeaweedFS keeps each as a directory under /buckets of its
// filer, so it is made there, without an S3 client, and waited for until the filer lists it.
func (s *SeaweedFS) CreateBucket(ctx context.Context, name string) error {
	u := s.filerURL() + "/buckets/" + name + "/"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("create bucket %s: %s", name, resp.Status)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create bucket %s: not listed after 30 s", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the process and keeps its data: the store is unreachable (connections refused)
// until Start.
func (s *SeaweedFS) Stop() {
	if s.proc != nil {
		s.proc.stop(10 * time.Second)
		s.proc = nil
	}
}

// Close stops the process and removes its data.
func (s *SeaweedFS) Close() {
	s.Stop()
	os.RemoveAll(s.dir)
}

// Log is the server's log so far, for a failing test's message.
func (s *SeaweedFS) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "seaweedfs.log"))
	return string(tail(b, 40))
}

// CPUSeconds is the process's CPU time.
func (s *SeaweedFS) CPUSeconds() (float64, error) {
	if s.proc == nil {
		return 0, errors.New("seaweedfs is not running")
	}
	return procCPUSeconds(s.proc.cmd.Process.Pid)
}

// EnsureSeaweedFSBuilt builds weed into BinDir with scripts/build-seaweedfs.sh when it is
// missing; a cold build takes several minutes.
func EnsureSeaweedFSBuilt(ctx context.Context) error {
	dir := BinDir()
	if haveWeed(dir) {
		return nil
	}
	root, err := repoRoot()
	if err != nil {
		return fmt.Errorf("build seaweedfs: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "build-seaweedfs.sh"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "REWATCH_BIN_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/build-seaweedfs.sh: %w\n%s", err, tail(out, 40))
	}
	if !haveWeed(dir) {
		return fmt.Errorf("scripts/build-seaweedfs.sh succeeded but %s lacks weed", dir)
	}
	return nil
}

// RequireSeaweedFS starts SeaweedFS for t (building it first when missing) and removes it when
// t ends. When it cannot be built or started, t is skipped on a developer's machine and fails
// under CI=true; unless the tests that start processes were asked for (OptedIn), t is skipped
// at once.
func RequireSeaweedFS(t testing.TB, o SeaweedOptions) *SeaweedFS {
	t.Helper()
	SkipUnlessOptedIn(t, "starts a real S3 server (SeaweedFS)")
	if o.Logf == nil {
		o.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	fail := unavailable(t, os.Getenv("CI") == "true")
	if err := EnsureSeaweedFSBuilt(ctx); err != nil {
		fail("SeaweedFS unavailable: %v", err)
	}
	s, err := StartSeaweedFS(ctx, o)
	if err != nil {
		fail("SeaweedFS did not start: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

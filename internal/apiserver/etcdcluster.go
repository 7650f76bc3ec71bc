package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rewatch/rewatch/internal/loopback"
)

// etcdMembers is the size of the HA cluster's etcd: the smallest that survives losing one.
const etcdMembers = 3

func (h *HA) startEtcd(ctx context.Context) error {
	ports, err := loopback.FreePorts(2 * etcdMembers)
	if err != nil {
		return err
	}
	var initial []string
	for i := range etcdMembers {
		initial = append(initial, fmt.Sprintf("etcd%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	for i := range etcdMembers {
		client := "http://127.0.0.1:" + strconv.Itoa(ports[2*i])
		peer := "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1])
		name := fmt.Sprintf("etcd%d", i)
		h.etcd = append(h.etcd, &etcdMember{name: name, clientURL: client, args: []string{
			"--name=" + name,
			"--data-dir=" + filepath.Join(h.dir, name),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=" + strings.Join(initial, ","),
			"--initial-cluster-state=new",
			"--initial-cluster-token=rewatch-ha",
			"--log-level=warn",
			// Durability is worthless for a throwaway test store, and fsync is most of etcd's
			// write latency.
			"--unsafe-no-fsync",
			// Twice etcd's defaults (100 ms, 1 s): on a loaded machine shared with several
			// kube-apiservers, the defaults lose leaders to scheduling delays alone.
			"--heartbeat-interval=200",
			"--election-timeout=2000",
		}})
	}
	// All at once: a member waits for a quorum before it answers /health.
	errs := make([]error, etcdMembers)
	var wg sync.WaitGroup
	for i := range h.etcd {
		wg.Go(func() { errs[i] = h.StartEtcdMember(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StartEtcdMember starts etcd member i (again, with its data: a restarted member rejoins the
// cluster) and returns once it reports itself healthy, which needs a leader.
func (h *HA) StartEtcdMember(ctx context.Context, i int) error {
	m := h.etcd[i]
	p, err := h.launch(&m.proc, m.name, filepath.Join(h.opts.BinDir, "etcd"), m.args)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, p, http.DefaultClient, m.clientURL+"/health", 60*time.Second); err != nil {
		return fmt.Errorf("%s did not become healthy: %w\n%s", m.name, err, p.logTail(30))
	}
	return nil
}

// StopEtcdMember stops etcd member i (SIGTERM, then SIGKILL after 10 s).
func (h *HA) StopEtcdMember(i int) {
	if p := h.take(&h.etcd[i].proc); p != nil {
		p.stop(10 * time.Second)
	}
}

// KillEtcdMember kills etcd member i with SIGKILL, as a crashed node: no leadership transfer,
// no goodbye to the peers. It returns once the process is gone.
func (h *HA) KillEtcdMember(i int) error {
	p := h.take(&h.etcd[i].proc)
	if p == nil {
		return fmt.Errorf("%s is not running", h.etcd[i].name)
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exited
	h.logf("apiserver: %s killed", h.etcd[i].name)
	return nil
}

// etcdStatus is the part of etcd's Maintenance/Status answer the harness reads; the gateway
// encodes uint64 as JSON strings.
type etcdStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
		Revision string `json:"revision"`
	} `json:"header"`
	Leader string `json:"leader"`
}

func (h *HA) memberStatus(ctx context.Context, i int) (etcdStatus, error) {
	var st etcdStatus
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := etcdCall(ctx, h.etcd[i].clientURL, "/v3/maintenance/status", map[string]any{}, &st)
	return st, err
}

// eachRunningStatus asks the running members for their status in turn, handing visit each
// answer until visit reports it is done; it returns the last error a member gave.
func (h *HA) eachRunningStatus(ctx context.Context, visit func(i int, st etcdStatus) (done bool)) (last error) {
	for i := range h.etcd {
		h.mu.Lock()
		running := h.etcd[i].proc != nil
		h.mu.Unlock()
		if !running {
			continue
		}
		st, err := h.memberStatus(ctx, i)
		if err != nil {
			last = err
			continue
		}
		if visit(i, st) {
			return last
		}
	}
	return last
}

// EtcdLeader is the index of the etcd member that leads, as the running members agree: the
// one whose own status names itself leader.
func (h *HA) EtcdLeader(ctx context.Context) (int, error) {
	leader := -1
	last := h.eachRunningStatus(ctx, func(i int, st etcdStatus) bool {
		if st.Leader != "" && st.Leader != "0" && st.Leader == st.Header.MemberID {
			leader = i
			return true
		}
		return false
	})
	if leader >= 0 {
		return leader, nil
	}
	return -1, fmt.Errorf("no etcd member leads (last error: %v)", last)
}

// WaitEtcdLeader waits until a running member leads and returns its index.
func (h *HA) WaitEtcdLeader(ctx context.Context, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		i, err := h.EtcdLeader(ctx)
		if err == nil || time.Now().After(deadline) {
			return i, err
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Revision is etcd's current revision, the newest resourceVersion a kube-apiserver can hand
// out, from the first running member that answers.
func (h *HA) Revision(ctx context.Context) (int64, error) {
	var revision string
	answered := false
	last := h.eachRunningStatus(ctx, func(_ int, st etcdStatus) bool {
		revision, answered = st.Header.Revision, true
		return true
	})
	if answered {
		return strconv.ParseInt(revision, 10, 64)
	}
	return 0, fmt.Errorf("etcd current revision: no member answered (last error: %v)", last)
}

package controllers

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/rewatch/rewatch/internal/apiserver"
	"github.com/rewatch/rewatch/internal/faultproxy"
	"github.com/rewatch/rewatch/internal/testbackend"
	"github.com/rewatch/rewatch/sim"
)

var shared testbackend.SharedReal

func TestMain(m *testing.M) {
	apiserver.MainUnlessOptedIn("the controller e2e tests (real kube-apiserver and etcd, and the simulator)")
	code := m.Run()
	shared.Stop()
	// The managers and factories were stopped: nothing of theirs may be left but
	// controller-runtime's workqueue metrics loops.
	os.Exit(testbackend.CheckLeaks(code,
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*Typed[...]).updateUnfinishedWorkLoop"),
		goleak.IgnoreAnyFunction("k8s.io/client-go/util/workqueue.(*delayingType[...]).waitingLoop"),
	))
}

// forEachBackend runs a scenario on the simulator, when it can serve it, and on the real
// kube-apiserver (which, under CI=true, fails rather than skips when it cannot start).
// controller-runtime needs API discovery for its RESTMapper, which the simulator does not
// serve, so its scenarios run on the real server alone. The scenarios spend most of their time
// waiting out backoffs, so every one runs in parallel with the others.
func forEachBackend(t *testing.T, withSim bool, scenario func(t *testing.T, b testbackend.Backend)) {
	if withSim {
		t.Run("sim", func(t *testing.T) {
			t.Parallel()
			b, err := testbackend.NewSim(sim.Options{BookmarkInterval: 2 * time.Second})
			require.NoError(t, err)
			t.Cleanup(b.Server.Close)
			scenario(t, b)
		})
	}
	t.Run("kube-apiserver", func(t *testing.T) {
		t.Parallel()
		scenario(t, shared.Get(t))
	})
}

var nsSeq atomic.Int64

// namespace is a fresh namespace for one test on b.
func namespace(t *testing.T, b testbackend.Backend, prefix string) string {
	ns := fmt.Sprintf("%s-%d-%d", prefix, nsSeq.Add(1), time.Now().UnixNano()%100000)
	require.NoError(t, b.EnsureNamespace(t.Context(), ns))
	return ns
}

// proxied is a fault proxy in front of b, and a rest.Config through it: the proxy holds the
// credentials upstream, so the config needs none.
func proxied(t *testing.T, b testbackend.Backend) (*faultproxy.Proxy, *rest.Config) {
	p, err := faultproxy.New(faultproxy.Config{Upstream: b.URL(), Transport: b.Transport(), ForceJSON: true})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p, &rest.Config{Host: p.URL(), QPS: 500, Burst: 1000}
}

// direct is a clientset that reaches b without the proxy, for the test's own writes and checks.
func direct(t *testing.T, b testbackend.Backend) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: b.URL(), Transport: b.Transport(), QPS: 500, Burst: 1000})
	require.NoError(t, err)
	return cs
}

// logRequestsOnFailure logs, if t fails, every request the proxy saw and the fault it got: what
// a reflector did through the faults is what explains a scenario that never ended.
func logRequestsOnFailure(t *testing.T, name string, p *faultproxy.Proxy) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, r := range p.Requests() {
			t.Logf("%s: %s %s %s?%s -> %d fault=%q events=%d", name, r.Time.Format("15:04:05.000"), r.Kind, r.Path, r.Query.Encode(), r.Status, r.Fault, r.Events)
		}
	})
}

// fullStateTransfers counts the requests for configmaps that the server began answering with
// the whole state: a LIST (its first page) or a watch-list (sendInitialEvents=true, which
// client-go v0.37, controller-runtime and rewatch's informers over a ListerWatcher use by
// default in place of a LIST). A request refused at once (a 429 at open) transferred nothing,
// and nor did a LIST of one item (limit=1), the consistent read a start from a persisted cache
// makes.
func fullStateTransfers(p *faultproxy.Proxy) int {
	n := 0
	for _, r := range p.Requests() {
		if !strings.HasSuffix(r.Path, "/configmaps") || r.Status != http.StatusOK {
			continue
		}
		switch {
		case r.Kind == faultproxy.List && r.Query.Get("continue") == "" && r.Query.Get("limit") != "1":
			n++
		case r.Kind == faultproxy.Watch && r.Query.Get("sendInitialEvents") == "true":
			n++
		}
	}
	return n
}

// storm is the fault mix of the storm benchmark on the watch: 429s at open (with and without
// Retry-After) and as ERROR events, InternalErrors as events and at open, resets mid-stream.
// It ends with one 410 after the next event, which is the only fault that may cost a LIST.
// allFired reports when every fault has reached the client (a fault counts when delivered, not
// when its watch opened), so the 410 needs an event after its watch opened: see untilFired.
func storm(p *faultproxy.Proxy) (expired int, allFired func() bool) {
	tooMany := faultproxy.TooManyRequests(1)
	var handles []*faultproxy.Handle
	for _, f := range []faultproxy.Fault{
		faultproxy.Respond(tooMany),
		faultproxy.WatchError(tooMany).AfterDelay(200 * time.Millisecond),
		faultproxy.WatchError(faultproxy.InternalError()).AfterDelay(200 * time.Millisecond),
		faultproxy.Reset().AfterDelay(300 * time.Millisecond),
		faultproxy.Respond(faultproxy.InternalError()),
		faultproxy.Respond(tooMany).WithHeader("Retry-After", "1"),
		faultproxy.WatchError(faultproxy.InternalError()).AfterDelay(200 * time.Millisecond),
		faultproxy.Reset().AfterDelay(200 * time.Millisecond),
		faultproxy.WatchError(faultproxy.Expired()).AfterEvents(1),
	} {
		handles = append(handles, p.AddRule(faultproxy.Rule{Kind: faultproxy.Watch, PathContains: "/configmaps", Times: 1, Fault: f}))
	}
	return 1, func() bool {
		for _, h := range handles {
			if h.Fired() == 0 {
				return false
			}
		}
		return true
	}
}

// untilFired waits up to within for each reflector's allFired, writing meanwhile. The storm's
// last fault, the 410, comes after the next event of a watch, and a watch that has caught up on
// a quiet server gets no event at all — not even a bookmark, which the watch cache (and the
// simulator, which follows it) sends only past the resourceVersion the watch started from — so
// as long as one reflector is still on its way through the faults, a new configmap is created
// every pause.
// Each is written once and never changed: a relist cannot skip a state of it, so the handlers'
// states stay comparable. It returns how long each reflector took, from the call, and fails the
// test for one that never got through.
func untilFired(t *testing.T, b testbackend.Backend, ns string, pause, within time.Duration, allFired map[string]func() bool) map[string]time.Duration {
	start := time.Now()
	through := map[string]time.Duration{}
	for tick := 0; ; tick++ {
		for name, fired := range allFired {
			if _, done := through[name]; !done && fired() {
				through[name] = time.Since(start)
			}
		}
		if len(through) == len(allFired) || time.Since(start) > within {
			break
		}
		require.NoError(t, b.Put(t.Context(), configMaps, ns, fmt.Sprintf("tick-%d", tick), "tick"))
		time.Sleep(pause)
	}
	for name := range allFired {
		require.Contains(t, through, name, "not every fault was served to %s within %v", name, within)
	}
	return through
}

// startManager starts mgr and waits for its cache to sync. It returns stop, which stops the
// manager and waits until it has returned (its informers with it); the end of the test stops
// it too, if the test has not.
func startManager(t *testing.T, mgr manager.Manager) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("the manager did not stop")
			}
		})
	}
	t.Cleanup(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	require.True(t, mgr.GetCache().WaitForCacheSync(syncCtx), "the manager's cache never synced")
	return stop
}

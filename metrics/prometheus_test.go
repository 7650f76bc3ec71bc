package metrics_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/rewatch/rewatch"
	"github.com/rewatch/rewatch/fsm"
	"github.com/rewatch/rewatch/metrics"
	"github.com/rewatch/rewatch/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCountsEveryCall(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	p, err := metrics.NewPrometheus(reg, metrics.Options{Subsystem: "cm", ConstLabels: prometheus.Labels{"resource": "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Request("list")
	p.Request("watch")
	p.Request("watch")
	p.Transition(fsm.Watching, fsm.Backoff, fsm.CauseServerBusy)
	p.WatchEvent(fsm.Added)
	p.WatchEvent(fsm.Modified)
	p.WatchEvent(fsm.Modified)
	p.Waited(fsm.CauseServerBusy, 1500*time.Millisecond)
	p.Objects(42)

	want := `
# HELP rewatch_cm_requests_total LIST page and WATCH requests issued, by kind.
# TYPE rewatch_cm_requests_total counter
rewatch_cm_requests_total{kind="list",resource="configmaps"} 1
rewatch_cm_requests_total{kind="watch",resource="configmaps"} 2
# HELP rewatch_cm_transitions_total State machine transitions, by source state, target state and cause.
# TYPE rewatch_cm_transitions_total counter
rewatch_cm_transitions_total{cause="server-busy",from="Watching",resource="configmaps",to="Backoff"} 1
# HELP rewatch_cm_objects Objects in the reflector's store.
# TYPE rewatch_cm_objects gauge
rewatch_cm_objects{resource="configmaps"} 42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rewatch_cm_requests_total", "rewatch_cm_transitions_total", "rewatch_cm_objects"); err != nil {
		t.Error(err)
	}
	ev := func(typ string) float64 {
		c, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range c {
			if mf.GetName() != "rewatch_cm_watch_events_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "type" && l.GetValue() == typ {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return -1
	}
	if got := ev("MODIFIED"); got != 2 {
		t.Errorf("MODIFIED events = %v, want 2", got)
	}
	if got := ev("DELETED"); got != 0 {
		t.Errorf("DELETED events = %v, want 0 (pre-created child)", got)
	}
	if n := testutil.CollectAndCount(reg, "rewatch_cm_backoff_wait_seconds"); n != 1 {
		t.Errorf("wait histogram series = %d, want 1", n)
	}
	wantHist := `
# HELP rewatch_cm_backoff_wait_seconds Completed backoff and Retry-After waits, by the cause that started them.
# TYPE rewatch_cm_backoff_wait_seconds histogram
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="0.005"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="0.025"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="0.1"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="0.25"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="0.5"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="1"} 0
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="2.5"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="5"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="10"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="30"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="60"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="120"} 1
rewatch_cm_backoff_wait_seconds_bucket{reason="server-busy",resource="configmaps",le="300"} 1
rewatch_cm_backoff_wait_seconds_sum{reason="server-busy",resource="configmaps"} 1.5
rewatch_cm_backoff_wait_seconds_count{reason="server-busy",resource="configmaps"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(wantHist), "rewatch_cm_backoff_wait_seconds"); err != nil {
		t.Error(err)
	}
}

// A second adapter with the same names must fail without leaving half its collectors behind,
// or the caller could never register a correctly named one afterwards.
func TestRegisterConflictLeavesNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Occupy the name of the last collector registered, so the others succeed first.
	squatter := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "rewatch", Name: "objects", Help: "Objects in the reflector's store."})
	reg.MustRegister(squatter)
	if _, err := metrics.NewPrometheus(reg, metrics.Options{}); err == nil {
		t.Fatal("NewPrometheus succeeded despite a conflicting collector")
	}
	reg.Unregister(squatter)
	if _, err := metrics.NewPrometheus(reg, metrics.Options{}); err != nil {
		t.Fatalf("after the conflict was removed: %v", err)
	}
	if _, err := metrics.NewPrometheus(nil, metrics.Options{}); err == nil {
		t.Error("nil Registerer accepted")
	}
}

// The adapter wired into a real reflector: the counters agree with Stats.
func TestAgreesWithStats(t *testing.T) {
	srv := sim.New(sim.Options{})
	url, err := srv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := srv.Create(sim.ConfigMaps, "default", n, map[string]string{"k": n}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	p, err := metrics.NewPrometheus(reg, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rewatch.New(rewatch.Config{
		Connection: rewatch.Connection{Client: &http.Client{}, Server: url, Resource: rewatch.Resource{Version: "v1", Resource: "configmaps"}},
		Metrics:    p,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitFor(t, func() bool { return r.Stats().State == fsm.Watching })
	if _, err := srv.Update(sim.ConfigMaps, "default", "a", map[string]string{"k": "A"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.Stats().WatchEvents >= 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := r.Stats()
	if got := testutil.ToFloat64(p.RequestsCounter("list")); got != float64(st.ListPages) {
		t.Errorf("list requests = %v, Stats.ListPages = %d", got, st.ListPages)
	}
	if got := testutil.ToFloat64(p.RequestsCounter("watch")); got != float64(st.Watches) {
		t.Errorf("watch requests = %v, Stats.Watches = %d", got, st.Watches)
	}
	if got := testutil.ToFloat64(p.ObjectsGauge()); got != 3 {
		t.Errorf("objects gauge = %v, want 3", got)
	}
}

// waitFor polls a loopback server's effect with a generous deadline; it never asserts speed.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package soak

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rewatch/rewatch/internal/faultproxy"
)

// recoverBound: after a long outage the reflector sits in a backoff delay of up to 2×30 s
// (cap 30 s, jitter 1.0), so it may need that long before its next attempt, plus the
// convergence itself.
const recoverBound = 60*time.Second + convergeBound

var cmGR = schema.GroupResource{Resource: "configmaps"}

// TestServerDownForever: the server is unreachable (the port refuses connections) for
// -soak.down. The reflector must not hot-loop — its requests follow the backoff schedule —
// and must recover on its own when the server is back, with the writes made meanwhile.
func TestServerDownForever(t *testing.T) {
	t.Run("sim", func(t *testing.T) {
		t.Parallel()
		downScenario(t, newSimBackend(t))
	})
	t.Run("kube-apiserver", func(t *testing.T) {
		t.Parallel()
		downScenario(t, sharedReal(t))
	})
}

func downScenario(t *testing.T, b backend) {
	d := *downDuration
	r := newRig(t, b, "down")
	ctx := context.Background()
	for i := range 5 {
		require.NoError(t, b.Put(ctx, configMaps, r.ns, fmt.Sprintf("obj-%d", i), "0"))
	}
	r.start(nil)
	_, err := r.converge(convergeBound)
	require.NoError(t, err)

	r.gate.Down()
	downAt := time.Now()
	// The server changes while the reflector cannot see it.
	time.Sleep(d / 2)
	require.NoError(t, b.Put(ctx, configMaps, r.ns, "obj-0", "changed"))
	require.NoError(t, b.Delete(ctx, configMaps, r.ns, "obj-1"))
	require.NoError(t, b.Put(ctx, configMaps, r.ns, "added", "1"))
	time.Sleep(d - time.Since(downAt))
	upAt := time.Now()
	n, at := r.sentBetween(downAt, upAt)
	require.NoError(t, r.gate.Up())
	took, err := r.converge(recoverBound)
	require.NoError(t, err)

	allowed := maxAttempts(d) + 1 // +1: the at-once re-watch when the open stream broke
	cg := clientGoAttempts(d) + 1
	t.Logf("RESULT down %s backend=%s: %d requests while down (allowed %d, client-go's schedule %d) at %v; recovered %s after the server returned",
		d, b.Name(), n, allowed, cg, at, took.Round(100*time.Millisecond))
	require.LessOrEqual(t, n, allowed, "requests while the server was down exceed the backoff schedule: %v", at)
	if d >= 3*time.Minute {
		// docs/semantics.md "Waiting": in a sustained outage, no more requests than client-go.
		require.LessOrEqual(t, n, cg, "more requests than client-go's schedule in %v: %v", d, at)
	}
	require.GreaterOrEqual(t, n, 2, "the reflector gave up retrying")
	recordResult("server unreachable (connection refused)", b.Name(), fmt.Sprintf("%s down", d),
		fmt.Sprintf("requests while down: %d (backoff allows %d, client-go's schedule %d); lost 0; recovered within %.1f s", n, allowed, cg, took.Seconds()))
}

// TestAnswerForever: a server that answers every request with the same failure for
// -soak.down. Counted at the fault proxy, so every request the reflector sent is there.
func TestAnswerForever(t *testing.T) {
	t.Parallel() // simulator only: it may overlap the soaks
	cases := []struct {
		name    string
		kind    faultproxy.Kind
		fault   faultproxy.Fault
		perTry  int // requests per backoff step
		comment string
	}{
		{"403", faultproxy.Any, faultproxy.Respond(faultproxy.Forbidden(cmGR)), 1, "every LIST 403 Forbidden"},
		{"404", faultproxy.Any, faultproxy.Respond(faultproxy.NotFound(cmGR)), 1, "every LIST 404 NotFound (CRD not installed)"},
		{"retry-after-0", faultproxy.Any, faultproxy.Respond(faultproxy.TooManyRequests(0)).WithHeader("Retry-After", "0"), 1, "every LIST 429 with Retry-After: 0"},
		// LIST succeeds, every WATCH is refused: a reflector that resets its backoff on every
		// success (kube-rs) would loop LIST+WATCH at the first step.
		{"403-watch-only", faultproxy.Watch, faultproxy.Respond(faultproxy.Forbidden(cmGR)), 2, "LIST ok, every WATCH 403"},
		{"retry-after-0-watch-only", faultproxy.Watch, faultproxy.Respond(faultproxy.TooManyRequests(0)).WithHeader("Retry-After", "0"), 2, "LIST ok, every WATCH 429 Retry-After: 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := *downDuration
			b := newSimBackend(t)
			r := newRig(t, b, "forever")
			ctx := context.Background()
			for i := range 5 {
				require.NoError(t, b.Put(ctx, configMaps, r.ns, fmt.Sprintf("obj-%d", i), "0"))
			}
			h := r.proxy.AddRule(faultproxy.Rule{Kind: c.kind, Times: -1, Fault: c.fault})
			start := time.Now()
			r.start(nil)
			time.Sleep(d)
			end := time.Now()
			var n int
			var at []time.Duration
			for _, rec := range r.proxy.Requests() {
				if !rec.Time.After(end) {
					n++
					at = append(at, rec.Time.Sub(start).Round(10*time.Millisecond))
				}
			}
			r.proxy.ClearRules()
			require.NoError(t, b.Put(ctx, configMaps, r.ns, "after", "1"))
			took, err := r.converge(recoverBound)
			require.NoError(t, err)
			allowed := c.perTry*maxAttempts(d) + 1
			cg := c.perTry*clientGoAttempts(d) + 1
			t.Logf("RESULT %s for %s: %d requests (%d answered by the fault; allowed %d) at %v; recovered %s after it cleared",
				c.name, d, n, h.Fired(), allowed, at, took.Round(100*time.Millisecond))
			require.LessOrEqual(t, n, allowed, "requests exceed the backoff schedule: %v", at)
			if d >= 3*time.Minute {
				require.LessOrEqual(t, n, cg, "more requests than client-go's schedule in %v: %v", d, at)
			}
			require.GreaterOrEqual(t, h.Fired(), 2, "the reflector gave up retrying")
			recordResult(c.comment, "sim", d.String(), fmt.Sprintf("requests: %d (backoff allows %d, client-go's schedule %d); recovered within %.1f s after the fault cleared", n, allowed, cg, took.Seconds()))
		})
	}
}

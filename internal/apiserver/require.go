package apiserver

import (
	"context"
	"os"
	"testing"
	"time"
)

// RequireServer starts a server for t and stops it when t ends. When the
// server cannot be built or started, the test is skipped on a developer
// machine but fails under CI=true: CI must never pass by skipping e2e. Unless the tests that
// start processes were asked for (OptedIn), it skips t at once, saying how to ask.
func RequireServer(t testing.TB, opts Options) *Server {
	t.Helper()
	SkipUnlessOptedIn(t, "starts a real kube-apiserver and etcd")
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	return requireStarted(t, "real kube-apiserver", func(ctx context.Context) (*Server, error) {
		return Start(ctx, opts)
	})
}

// unavailable is how a test reacts to a server it cannot have.
func unavailable(t testing.TB, ci bool) func(format string, args ...any) {
	if ci {
		return t.Fatalf
	}
	return t.Skipf
}

// RequireHA starts an HA control plane (StartHA) for t and stops it when t ends. When it
// cannot be built or started — HAProxy missing included — the test is skipped on a developer
// machine but fails under CI=true. Unless OptedIn, it skips t at once.
func RequireHA(t testing.TB, opts HAOptions) *HA {
	t.Helper()
	SkipUnlessOptedIn(t, "starts an HA control plane (three etcd, three kube-apiservers, HAProxy)")
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	if err := HAProxyAvailable(); err != nil {
		unavailable(t, os.Getenv("CI") == "true")("HA control plane unavailable: %v", err)
	}
	return requireStarted(t, "HA control plane", func(ctx context.Context) (*HA, error) {
		return StartHA(ctx, opts)
	})
}

// requireStarted builds the binaries, starts what start starts (named what in the messages)
// and stops it when t ends; when either step fails, t is skipped, or failed under CI=true.
func requireStarted[S interface{ Stop() }](t testing.TB, what string, start func(context.Context) (S, error)) S {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	fail := unavailable(t, os.Getenv("CI") == "true")
	if err := EnsureBuilt(ctx); err != nil {
		fail("real kube-apiserver unavailable: %v", err)
	}
	s, err := start(ctx)
	if err != nil {
		fail("%s did not start: %v", what, err)
	}
	t.Cleanup(s.Stop)
	return s
}

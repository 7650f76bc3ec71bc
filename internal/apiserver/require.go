package apiserver

import (
	"context"
	"os"
	"testing"
	"time"
)

// RequireServer starts a server for t and stops it when t ends. When the
// server cannot be built or started, the test is skipped on a developer
// machine but fails under CI=true: CI must never pass by skipping e2e.
func RequireServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	fail := unavailable(t, os.Getenv("CI") == "true")
	if err := EnsureBuilt(ctx); err != nil {
		fail("real kube-apiserver unavailable: %v", err)
	}
	s, err := Start(ctx, opts)
	if err != nil {
		fail("real kube-apiserver did not start: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
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
// machine but fails under CI=true.
func RequireHA(t testing.TB, opts HAOptions) *HA {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	fail := unavailable(t, os.Getenv("CI") == "true")
	if err := HAProxyAvailable(); err != nil {
		fail("HA control plane unavailable: %v", err)
	}
	if err := EnsureBuilt(ctx); err != nil {
		fail("real kube-apiserver unavailable: %v", err)
	}
	h, err := StartHA(ctx, opts)
	if err != nil {
		fail("HA control plane did not start: %v", err)
	}
	t.Cleanup(h.Stop)
	return h
}

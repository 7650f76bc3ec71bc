package testbackend

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rewatch/rewatch/internal/apiserver"
)

// CI reports whether the tests run under CI (CI=true): there, a kube-apiserver that cannot be
// started fails the test instead of skipping it, as the developers' guide asks.
func CI() bool { return os.Getenv("CI") == "true" }

// Unavailable fails t under CI and skips it elsewhere, saying how to get the server.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if CI() {
		t.Fatalf("real kube-apiserver unavailable under CI: %v", err)
	}
	t.Skipf("real kube-apiserver unavailable (run scripts/build-apiserver.sh): %v", err)
}

// StartRealWithin is StartReal bounded by a fresh timeout that covers a first build.
func StartRealWithin(timeout time.Duration, opts apiserver.Options) (*Real, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return StartReal(ctx, opts)
}

// SharedReal is one real server for a whole test binary, started on first use (a start costs
// seconds); TestMain calls Stop.
type SharedReal struct {
	// Options start the server; the zero value is kube-apiserver's defaults.
	Options apiserver.Options

	once sync.Once
	real *Real
	err  error
}

// Get starts the server the first time and returns it, or fails or skips t (Unavailable).
func (s *SharedReal) Get(t testing.TB) *Real {
	t.Helper()
	apiserver.SkipUnlessOptedIn(t, "needs a real kube-apiserver and etcd")
	s.once.Do(func() { s.real, s.err = StartRealWithin(20*time.Minute, s.Options) })
	if s.err != nil {
		Unavailable(t, s.err)
	}
	return s.real
}

// Stop stops the server if one was started.
func (s *SharedReal) Stop() {
	if s.real != nil {
		s.real.Server.Stop()
	}
}

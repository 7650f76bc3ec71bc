package apiserver

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fakeTB records which of Skipf and Fatalf was called.
type fakeTB struct {
	testing.TB
	called string
}

func (f *fakeTB) Skipf(format string, args ...any) {
	f.called = "skip: " + fmt.Sprintf(format, args...)
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.called = "fatal: " + fmt.Sprintf(format, args...)
}

func TestUnavailableFailsUnderCI(t *testing.T) {
	ft := &fakeTB{TB: t}
	unavailable(ft, true)("no server: %s", "x")
	assert.Equal(t, "fatal: no server: x", ft.called)
	ft = &fakeTB{TB: t}
	unavailable(ft, false)("no server: %s", "x")
	assert.Equal(t, "skip: no server: x", ft.called)
}

func TestStartWithoutBinariesSaysHowToBuild(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: t.TempDir()})
	assert.ErrorContains(t, err, "scripts/build-apiserver.sh")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "c\nd", string(tail([]byte("a\nb\nc\nd\n"), 2)))
	assert.Equal(t, "a", string(tail([]byte("a"), 5)))
}

// The tests that start processes run when REWATCH_E2E asks for them or under CI=true, and a
// plain `go test ./...` (neither set) starts nothing.
func TestOptedInOnlyWhenAsked(t *testing.T) {
	for _, tc := range []struct {
		e2e, ci string
		want    bool
	}{
		{"", "", false},
		{"0", "", false},
		{"false", "", false},
		{"", "false", false},
		{"1", "", true},
		{"true", "", true},
		{"", "true", true},
		{"0", "true", true},
	} {
		t.Setenv(OptInEnv, tc.e2e)
		t.Setenv("CI", tc.ci)
		assert.Equal(t, tc.want, OptedIn(), "REWATCH_E2E=%q CI=%q", tc.e2e, tc.ci)
	}
}

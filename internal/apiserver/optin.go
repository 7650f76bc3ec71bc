package apiserver

import (
	"fmt"
	"os"
	"testing"
)

// OptInEnv is the environment variable that asks for the tests that start processes: a real
// kube-apiserver and etcd, an HA control plane behind HAProxy, and the e2e, soak and controller
// packages that run on them. A plain `go test ./...` runs the unit, transcript and property
// tests only and starts nothing; `REWATCH_E2E=1 go test ./...` (what scripts/test.sh runs) runs
// everything.
const OptInEnv = "REWATCH_E2E"

// OptedIn reports whether the tests that start processes were asked for: REWATCH_E2E set to
// anything but "", "0" or "false", or CI=true, where every test runs and a server that cannot
// start fails the test (CI must never pass by skipping e2e).
func OptedIn() bool {
	if os.Getenv("CI") == "true" {
		return true
	}
	switch os.Getenv(OptInEnv) {
	case "", "0", "false":
		return false
	}
	return true
}

// notOptedIn says what was not run and how to run it.
func notOptedIn(what string) string {
	return fmt.Sprintf("%s: run with %s=1 go test (scripts/test.sh sets it)", what, OptInEnv)
}

// SkipUnlessOptedIn skips t, saying how to run it, unless the tests that start processes were
// asked for (OptedIn).
func SkipUnlessOptedIn(t testing.TB, what string) {
	t.Helper()
	if !OptedIn() {
		t.Skip(notOptedIn(what))
	}
}

// MainUnlessOptedIn is for the TestMain of a package whose every test starts or needs a real
// server (e2e, soak): unless OptedIn, it says how to run them and exits 0 without running any.
func MainUnlessOptedIn(what string) {
	if !OptedIn() {
		fmt.Println("skipped " + notOptedIn(what))
		os.Exit(0)
	}
}

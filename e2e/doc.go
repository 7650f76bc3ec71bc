// Package e2e runs the reflector against a real kube-apiserver and etcd (built from their Go
// modules by scripts/build-apiserver.sh) and against the simulator in package sim, through the
// fault-injecting proxy, one test per docs/semantics.md failure row. Every scenario runs on both
// backends: that is how the simulator proves it behaves as the real server does.
//
// The package starts processes (kube-apiserver, etcd, HAProxy), so it runs only when asked:
// REWATCH_E2E=1 go test -race ./e2e/ (scripts/test.sh sets it); a plain `go test ./...` skips
// it and says so. Under CI=true it always runs, and a real server that cannot be built or
// started fails the tests; elsewhere they skip with the reason.
package e2e

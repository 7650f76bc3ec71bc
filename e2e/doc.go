// Package e2e runs the reflector against a real kube-apiserver and etcd (built from their Go
// modules by scripts/build-apiserver.sh) and against the simulator in package sim, through the
// fault-injecting proxy, one test per docs/semantics.md failure row. Every scenario runs on both
// backends: that is how the simulator proves it behaves as the real server does.
//
// Under CI=true a real server that cannot be built or started fails the tests; elsewhere they
// skip with the reason.
package e2e

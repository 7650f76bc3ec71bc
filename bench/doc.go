// Package bench measures rewatch next to client-go's Reflector and a relist-on-error
// baseline: a transient-fault storm against the real kube-apiserver through the fault proxy,
// watch-stream throughput, initial sync, and the core Step micro-benchmarks. The heavy
// workloads run from the rewatch-bench program (go run ./bench/cmd/rewatch-bench); the
// throughput benchmarks run only under go test -bench. Results are in RESULTS.md.
package bench

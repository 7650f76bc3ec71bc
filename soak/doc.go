// Package soak holds rewatch's long-running reliability tests (docs/reliability.md): a seeded chaos soak
// against the simulator and the real kube-apiserver, and "server down / 403 / 404 /
// Retry-After: 0 forever" runs that count the requests the reflector sends. Everything lives in
// the tests; this file only names the package. docs/reliability.md has the figures and the
// commands. They start processes, so they run only when asked: with REWATCH_E2E=1 (or
// CI=true), as scripts/test.sh does; a plain `go test ./...` skips the package and says so. The
// defaults are short enough for scripts/test.sh; for the long runs:
//
//	REWATCH_E2E=1 go test ./soak -run Soak -soak.duration 30m -v -timeout 2h
//	REWATCH_E2E=1 go test ./soak -run Forever -soak.down 5m -v -timeout 1h
package soak

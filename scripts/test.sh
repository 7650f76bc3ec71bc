#!/usr/bin/env bash
# Runs every test: vet and format checks, unit, property, golden-transcript and e2e tests (the
# e2e tests run against a real kube-apiserver and etcd, built here on first use), all with the
# race detector, then a short run of every fuzz target. The README and .ci/run call this file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The tests that start processes (kube-apiserver, etcd, HAProxy, SeaweedFS: internal/apiserver's
# harness, e2e/, soak/, e2e/controllers, persist/objstore, bench's fleet) run only when asked;
# here every test runs.
export REWATCH_E2E=1

echo "== building kube-apiserver and etcd (skipped when up to date)"
scripts/build-apiserver.sh

echo "== building SeaweedFS, the S3 server of the object-store tests (skipped when up to date)"
scripts/build-seaweedfs.sh

echo "== installing HAProxy and rsvg-convert from Debian packages (skipped when present)"
scripts/install-packages.sh

# Every module of the workspace (go.work): the library and the modules of its tools. A pattern
# like ./... stops at a nested module's boundary, so each module's tree is named.
mapfile -t modules < <(go list -m -f '{{.Dir}}')
patterns=()
for dir in "${modules[@]}"; do
	rel=$(realpath --relative-to=. "$dir")
	if [[ $rel == . ]]; then patterns+=(./...); else patterns+=("./$rel/..."); fi
done

echo "== go vet and gofmt (${patterns[*]})"
go vet "${patterns[@]}"
unformatted=$(gofmt -l .)
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== what a consumer of the library takes on (scripts/check-consumer.sh)"
scripts/check-consumer.sh

echo "== go test -race ${patterns[*]}"
go test -race -timeout 60m "${patterns[@]}"

echo "== short fuzz runs (${FUZZTIME:=15s} each)"
# go test -fuzz can end with "context deadline exceeded" when the coordinator cannot stop its
# workers in time on a loaded machine, with no failing input. Such a
# run is repeated once; a run that found an input fails at once.
fuzz_once() {
	local out
	if out=$(go test -run '^$' -fuzz "^$1\$" -fuzztime "$FUZZTIME" "$2" 2>&1); then
		echo "$out" | tail -2
		return 0
	fi
	echo "$out" | tail -20
	if grep -q "context deadline exceeded" <<<"$out" && ! grep -q "Failing input written" <<<"$out"; then
		echo "-- $2 $1: the fuzzer's shutdown timed out without a failing input; running it again"
		go test -run '^$' -fuzz "^$1\$" -fuzztime "$FUZZTIME" "$2"
		return
	fi
	return 1
}

# Every Fuzz function in the module, found where it is declared.
grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./tools/' | sort | while read -r file; do
	for fn in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "-- $(dirname "$file") $fn"
		fuzz_once "$fn" "$(dirname "$file")"
	done
done

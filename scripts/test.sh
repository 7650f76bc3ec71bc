#!/usr/bin/env bash
# Runs every test: vet and format checks, unit, property, golden-transcript and e2e tests (the
# e2e tests run against a real kube-apiserver and etcd, built here on first use), all with the
# race detector, then a short run of every fuzz target. The README and .ci/run call this file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "== building kube-apiserver and etcd (skipped when up to date)"
scripts/build-apiserver.sh

echo "== go vet and gofmt"
go vet ./...
unformatted=$(gofmt -l .)
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go test -race ./..."
go test -race -timeout 60m ./...

echo "== short fuzz runs (${FUZZTIME:=15s} each)"
# Every Fuzz function in the module, found where it is declared.
grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | grep -v '^./tools/' | sort | while read -r file; do
	for fn in $(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "-- $(dirname "$file") $fn"
		go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$FUZZTIME" "$(dirname "$file")"
	done
done

#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the e2e tests run against.
# A cold build takes several minutes, so it is skipped while both binaries
# are newer than tools/apiserver/go.sum (the file that changes whenever the
# pinned versions do).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/tools/apiserver"
bin="${REWATCH_BIN_DIR:-$root/.cache/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

fresh() {
	[[ -x "$bin/$1" && "$bin/$1" -nt "$tools/go.sum" ]]
}

# go test runs packages in parallel, and more than one may ask for the
# build; the lock makes the later ones wait and then find fresh binaries.
if command -v flock >/dev/null; then
	exec 9>"$bin/.build.lock"
	flock 9
fi

if fresh kube-apiserver && fresh etcd && [[ "${1:-}" != "-f" ]]; then
	echo "build-apiserver: up to date in $bin"
	exit 0
fi

cd "$tools"
# The tools module is separate from the root one; a go.work above it (or an
# inherited GOFLAGS=-mod=vendor) would otherwise change what gets built.
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
start=$SECONDS
# Build into temporaries and rename, so an interrupted build never leaves a
# binary that looks fresh.
go build -trimpath -o "$bin/.etcd.tmp" ./cmd/etcd
go build -trimpath -o "$bin/.kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
mv -f "$bin/.etcd.tmp" "$bin/etcd"
mv -f "$bin/.kube-apiserver.tmp" "$bin/kube-apiserver"
echo "build-apiserver: built etcd and kube-apiserver into $bin in $((SECONDS - start))s"

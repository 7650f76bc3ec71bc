#!/usr/bin/env bash
# Builds the real kube-apiserver and etcd that the e2e tests run against, and
# kubectl from the same k8s.io/kubernetes module (the CLI's side-by-side e2e
# compares `rewatch watch` with `kubectl get -w`). A cold build takes several
# minutes, so each binary is skipped while it was built from the tools module
# as it is now: its go.mod, go.sum and Go files, whose digest is kept beside
# the binary (a fresh clone's new file times do not make it stale); -f
# rebuilds all three.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/tools/apiserver"
bin="${REWATCH_BIN_DIR:-$root/.cache/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

digest="$(cd "$tools" && find . \( -name go.mod -o -name go.sum -o -name '*.go' \) -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1)"

fresh() {
	[[ -x "$bin/$1" && -f "$bin/.$1.digest" && "$(cat "$bin/.$1.digest")" == "$digest" ]]
}

# go test runs packages in parallel, and more than one may ask for the
# build; the lock makes the later ones wait and then find fresh binaries.
if command -v flock >/dev/null; then
	exec 9>"$bin/.build.lock"
	flock 9
fi

force=false
[[ "${1:-}" == "-f" ]] && force=true

# name -> package, built from the tools module.
declare -A pkgs=(
	[etcd]=./cmd/etcd
	[kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
	[kubectl]=k8s.io/kubernetes/cmd/kubectl
)
stale=()
for name in etcd kube-apiserver kubectl; do
	if $force || ! fresh "$name"; then
		stale+=("$name")
	fi
done
if ((${#stale[@]} == 0)); then
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
for name in "${stale[@]}"; do
	go build -trimpath -o "$bin/.$name.tmp" "${pkgs[$name]}"
done
for name in "${stale[@]}"; do
	mv -f "$bin/.$name.tmp" "$bin/$name"
	echo "$digest" >"$bin/.$name.digest"
done
echo "build-apiserver: built ${stale[*]} into $bin in $((SECONDS - start))s"

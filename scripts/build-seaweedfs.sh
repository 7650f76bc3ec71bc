#!/usr/bin/env bash
# Builds SeaweedFS's weed, the real S3 server the tests of the persisted cache in object storage
# run against (internal/apiserver's SeaweedFS harness), from the separate tools/seaweedfs module
# (github.com/seaweedfs/seaweedfs, Apache-2.0, through the `tool` directive in its go.mod). A
# cold build takes several minutes on 2 cores, so it is skipped while weed was built from the
# tools module as it is now (a digest of its go.mod and go.sum, kept beside the binary); -f
# rebuilds it. Binaries go to .cache/bin, or $REWATCH_BIN_DIR, never into the repository.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/tools/seaweedfs"
bin="${REWATCH_BIN_DIR:-$root/.cache/bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"

digest="$(cd "$tools" && cat go.mod go.sum | sha256sum | cut -d' ' -f1)"

# go test runs packages in parallel, and more than one may ask for the build; the lock makes
# the later ones wait and then find a fresh binary.
if command -v flock >/dev/null; then
	exec 9>"$bin/.build-seaweedfs.lock"
	flock 9
fi

if [[ "${1:-}" != "-f" && -x "$bin/weed" && -f "$bin/.weed.digest" && "$(cat "$bin/.weed.digest")" == "$digest" ]]; then
	echo "build-seaweedfs: up to date in $bin"
	exit 0
fi

cd "$tools"
# The tools module is separate from the root one; a go.work above it (or an inherited
# GOFLAGS=-mod=vendor) would otherwise change what gets built.
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
start=$SECONDS
# Into a temporary and renamed, so an interrupted build never leaves a binary that looks fresh.
go build -trimpath -o "$bin/.weed.tmp" github.com/seaweedfs/seaweedfs/weed
mv -f "$bin/.weed.tmp" "$bin/weed"
echo "$digest" >"$bin/.weed.digest"
echo "build-seaweedfs: built weed into $bin in $((SECONDS - start))s"

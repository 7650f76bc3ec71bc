#!/usr/bin/env bash
# Installs the Debian packages the tests use, each only when its command is missing:
#   haproxy       HAProxy, which the e2e tests and the fleet's `ha` scenario put in front of
#                 several kube-apiservers (internal/apiserver's HA harness), as kubeadm's
#                 high-availability guide does;
#   rsvg-convert  librsvg's rasterizer (librsvg2-bin), the reference the diagrams' PNG is
#                 compared with (diagrams/svg).
# Needs root (or sudo) and apt-get; elsewhere it says what is missing and fails.
set -euo pipefail

# command:package pairs
wanted=(haproxy:haproxy rsvg-convert:librsvg2-bin)

missing=()
for pair in "${wanted[@]}"; do
	cmd=${pair%%:*} pkg=${pair#*:}
	if command -v "$cmd" >/dev/null 2>&1; then
		echo "$cmd present"
	else
		missing+=("$pkg")
	fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "missing ${missing[*]} and apt-get is not available: install them by hand" >&2
	exit 1
fi
run=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "missing ${missing[*]}, and installing needs root (no sudo here)" >&2
		exit 1
	fi
	run=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update
"${run[@]}" apt-get install -y "${missing[@]}"
echo "installed ${missing[*]}"

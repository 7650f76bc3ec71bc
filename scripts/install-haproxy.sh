#!/usr/bin/env bash
# Installs HAProxy from the distribution's packages, which the e2e tests and the fleet's `ha`
# scenario put in front of several kube-apiservers (internal/apiserver's HA harness), as
# kubeadm's high-availability guide does. Skipped when haproxy is already on PATH. Needs root
# (or sudo) and apt-get; elsewhere it says what is missing and fails.
set -euo pipefail

if command -v haproxy >/dev/null 2>&1; then
	echo "haproxy present: $(haproxy -v | head -1)"
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "haproxy is not installed and apt-get is not available: install HAProxy (2.x) by hand" >&2
	exit 1
fi
run=()
if [[ $(id -u) -ne 0 ]]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "haproxy is not installed and installing it needs root (no sudo here)" >&2
		exit 1
	fi
	run=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${run[@]}" apt-get update
"${run[@]}" apt-get install -y haproxy
echo "haproxy installed: $(haproxy -v | head -1)"

#!/usr/bin/env bash
# Installs the Debian packages the test tiers need when their binaries are missing.
# Usage: ensure-system-deps.sh binary:package [binary:package ...]
# Runs apt-get update at most once, and only when something is missing.
set -euo pipefail

missing=()
for pair in "$@"; do
  bin="${pair%%:*}"
  pkg="${pair#*:}"
  command -v "$bin" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "ensure-system-deps: installing Debian packages: ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt-get (unattended upgrades on a new machine, a parallel tier) instead of failing.
lock=(-o DPkg::Lock::Timeout=600)
$sudo apt-get "${lock[@]}" update -qq >&2
$sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >&2

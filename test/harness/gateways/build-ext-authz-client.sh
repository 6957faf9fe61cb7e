#!/usr/bin/env bash
# Builds the gRPC ext_authz client of the integration tier (ext-authz-client/, Envoy's published
# API from go-control-plane) once, into a cache outside the repository keyed by its sources'
# hash, so that a fresh clone's `make test` builds it and later runs reuse it.
# Cache: ${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}/ext-authz-client-<hash>/bin
# Usage: build-ext-authz-client.sh [--print-env]   (--print-env prints EXT_AUTHZ_CLIENT=<path>)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/ext-authz-client"
hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"
cache_root="${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}"
dest="$cache_root/ext-authz-client-$hash"

log() { echo "ext-authz-client: $*" >&2; }
die() { echo "ext-authz-client: ERROR: $*" >&2; exit 1; }
print_env=0
for arg in "$@"; do
  case "$arg" in
    --print-env) print_env=1 ;;
    *) die "unknown argument $arg" ;;
  esac
done
finish() { [ "$print_env" = 1 ] && echo "EXT_AUTHZ_CLIENT=$dest/bin/ext-authz-client"; exit 0; }
[ -f "$dest/.complete" ] && finish

GO="$(command -v go || command -v /usr/local/go/bin/go)" || die "no Go toolchain found (install Go into /usr/local/go or put it on PATH)"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="-trimpath -buildvcs=false" CGO_ENABLED=0

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-ext-authz-client"
flock 9
[ -f "$dest/.complete" ] && finish

start=$SECONDS
work="$cache_root/.build-ext-authz-client"
rm -rf "$work" "$dest.tmp"; mkdir -p "$work" "$dest.tmp/bin"
cp "$src/go.mod" "$src/go.sum" "$src/main.go" "$work/"
log "go build (go-control-plane/envoy; the first time takes a minute or more)"
(cd "$work" && nice -n 10 "$GO" build -mod=mod -ldflags "-s -w" -o "$dest.tmp/bin/ext-authz-client" .) || die "go build failed. Is the Go module proxy reachable?"
rm -rf "$dest" "$work"; mv "$dest.tmp" "$dest"
echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s with $("$GO" env GOVERSION)" > "$dest/.complete"
log "built in $((SECONDS - start))s into $dest/bin"
finish

#!/usr/bin/env bash
# Builds the gRPC ext_authz client of the integration tier (ext-authz-client/, Envoy's published
# API from go-control-plane) once, into a cache outside the repository keyed by its sources'
# hash, so that a fresh clone's `make test` builds it and later runs reuse it.
# Cache: ${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}/ext-authz-client-<hash>/bin
# Usage: build-ext-authz-client.sh [--print-env]   (--print-env prints EXT_AUTHZ_CLIENT=<path>)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../go-tool-cache.sh"

src="$here/ext-authz-client"
hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-12)"
cache_root="${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}"
tool_begin ext-authz-client "$cache_root/ext-authz-client-$hash" EXT_AUTHZ_CLIENT ext-authz-client "$@"
tool_lock
work="$cache_root/.build-ext-authz-client"
rm -rf "$work"; mkdir -p "$work"
cp "$src/go.mod" "$src/go.sum" "$src/main.go" "$work/"
log "go build (go-control-plane/envoy; the first time takes a minute or more)"
(cd "$work" && nice -n 10 "$GO" build -mod=mod -ldflags "-s -w" -o "$TOOL_TMP/bin/ext-authz-client" .) \
  || die "go build failed. Is the Go module proxy reachable?"
rm -rf "$work"
tool_done

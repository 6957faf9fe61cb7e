#!/usr/bin/env bash
# Builds Caddy from its Go module, once, into a cache outside the repository, for the
# integration tier's forward_auth tests (a real gateway no one here wrote).
#   caddy  (go install github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION)
# Cache: ${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}/caddy-<version>/bin
# Usage: build-caddy.sh [--print-env]   (--print-env also prints CADDY=<path to the binary>)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../go-tool-cache.sh"

CADDY_VERSION=v2.11.9
cache_root="${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}"
tool_begin caddy "$cache_root/caddy-$CADDY_VERSION" CADDY caddy "$@"
tool_lock
log "go install github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION (Go >= 1.25; the first time takes minutes)"
GOBIN="$TOOL_TMP/bin" nice -n 10 "$GO" install -ldflags "-s -w" \
  "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION" \
  || die "go install failed. Is the Go module proxy reachable?"
"$TOOL_TMP/bin/caddy" version >&2
tool_done

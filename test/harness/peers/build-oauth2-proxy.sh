#!/usr/bin/env bash
# Builds oauth2-proxy from its Go module, once, into a cache outside the repository, for the
# browser tier's relying-party test (the most deployed OIDC reverse proxy, a peer no one here wrote).
#   oauth2-proxy  (go install github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION,
#                  its version variable set so `oauth2-proxy --version` names the release)
# Cache: ${PORTCULLIS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/peers}/oauth2-proxy-<version>/bin
# Usage: build-oauth2-proxy.sh [--print-env]   (--print-env also prints OAUTH2_PROXY=<path to the binary>)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../go-tool-cache.sh"

OAUTH2_PROXY_VERSION=v7.15.6
MODULE=github.com/oauth2-proxy/oauth2-proxy/v7
cache_root="${PORTCULLIS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/peers}"
tool_begin oauth2-proxy "$cache_root/oauth2-proxy-$OAUTH2_PROXY_VERSION" OAUTH2_PROXY oauth2-proxy "$@"
tool_lock
log "go install $MODULE@$OAUTH2_PROXY_VERSION (the first time takes minutes)"
GOBIN="$TOOL_TMP/bin" nice -n 10 "$GO" install \
  -ldflags "-s -w -X $MODULE/pkg/version.VERSION=$OAUTH2_PROXY_VERSION" \
  "$MODULE@$OAUTH2_PROXY_VERSION" \
  || die "go install failed. Is the Go module proxy reachable?"
version="$("$TOOL_TMP/bin/oauth2-proxy" --version 2>&1)"
echo "$version" >&2
case "$version" in
  *"$OAUTH2_PROXY_VERSION"*) ;;
  *) die "the built binary does not report $OAUTH2_PROXY_VERSION (version ldflag path changed?)" ;;
esac
tool_done

#!/usr/bin/env bash
# Builds oauth2-proxy from its Go module, once, into a cache outside the repository, for the
# browser tier's relying-party test (the most deployed OIDC reverse proxy, a peer no one here wrote).
#   oauth2-proxy  (go install github.com/oauth2-proxy/oauth2-proxy/v7@$OAUTH2_PROXY_VERSION,
#                  its version variable set so `oauth2-proxy --version` names the release)
# Cache: ${PORTCULLIS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/peers}/oauth2-proxy-<version>/bin
# A complete cache directory (.complete) is not rebuilt: with the binary cached this is a no-op.
# A lock serializes concurrent builders (the browser tier's global setup and `make oauth2-proxy`).
#
# Usage: build-oauth2-proxy.sh              build when missing, print nothing on stdout
#        build-oauth2-proxy.sh --print-env  also print OAUTH2_PROXY=<path to the binary>
set -euo pipefail

OAUTH2_PROXY_VERSION=v7.15.6
MODULE=github.com/oauth2-proxy/oauth2-proxy/v7

cache_root="${PORTCULLIS_PEERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/peers}"
dest="$cache_root/oauth2-proxy-$OAUTH2_PROXY_VERSION"

log() { echo "oauth2-proxy: $*" >&2; }
die() { echo "oauth2-proxy: ERROR: $*" >&2; exit 1; }

print_env=0
for arg in "$@"; do
  case "$arg" in
    --print-env) print_env=1 ;;
    *) die "unknown argument $arg" ;;
  esac
done
done_() { [ "$print_env" = 1 ] && echo "OAUTH2_PROXY=$dest/bin/oauth2-proxy"; exit 0; }

[ -f "$dest/.complete" ] && done_

find_go() {
  for g in go /usr/local/go/bin/go "$HOME/go/bin/go" "$HOME/sdk/go/bin/go"; do
    if command -v "$g" >/dev/null 2>&1; then command -v "$g"; return 0; fi
  done
  return 1
}
GO="$(find_go)" || die "no Go toolchain found. Install Go into /usr/local/go or put it on PATH."
# A go.mod asking for a newer Go than the one here is satisfied through the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-oauth2-proxy"
if ! flock -n 9; then
  log "another build-oauth2-proxy.sh is building; waiting for it (lock $cache_root/.lock-oauth2-proxy)"
  flock 9
fi
[ -f "$dest/.complete" ] && done_

start=$SECONDS
rm -rf "$dest.tmp"; mkdir -p "$dest.tmp/bin"
log "go install $MODULE@$OAUTH2_PROXY_VERSION (the first time takes minutes)"
GOBIN="$dest.tmp/bin" nice -n 10 "$GO" install \
  -ldflags "-s -w -X $MODULE/pkg/version.VERSION=$OAUTH2_PROXY_VERSION" \
  "$MODULE@$OAUTH2_PROXY_VERSION" \
  || die "go install failed. Is the Go module proxy reachable?"
version="$("$dest.tmp/bin/oauth2-proxy" --version 2>&1)"
echo "$version" >&2
case "$version" in
  *"$OAUTH2_PROXY_VERSION"*) ;;
  *) die "the built binary does not report $OAUTH2_PROXY_VERSION (version ldflag path changed?)" ;;
esac
rm -rf "$dest"; mv "$dest.tmp" "$dest"
echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s with $("$GO" env GOVERSION)" > "$dest/.complete"
log "built in $((SECONDS - start))s into $dest/bin"
done_

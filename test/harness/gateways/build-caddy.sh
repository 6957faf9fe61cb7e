#!/usr/bin/env bash
# Builds Caddy from its Go module, once, into a cache outside the repository, for the
# integration tier's forward_auth tests (a real gateway no one here wrote).
#   caddy  (go install github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION)
# Cache: ${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}/caddy-<version>/bin
# A complete cache directory (.complete) is not rebuilt: with Caddy cached this is a no-op.
# A lock serializes concurrent builders (the integration tier's global setup and `make caddy`).
#
# Usage: build-caddy.sh              build when missing, print nothing on stdout
#        build-caddy.sh --print-env  also print CADDY=<path to the binary>
set -euo pipefail

CADDY_VERSION=v2.11.9

cache_root="${PORTCULLIS_GATEWAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/gateways}"
dest="$cache_root/caddy-$CADDY_VERSION"

log() { echo "caddy: $*" >&2; }
die() { echo "caddy: ERROR: $*" >&2; exit 1; }

print_env=0
for arg in "$@"; do
  case "$arg" in
    --print-env) print_env=1 ;;
    *) die "unknown argument $arg" ;;
  esac
done
done_() { [ "$print_env" = 1 ] && echo "CADDY=$dest/bin/caddy"; exit 0; }

[ -f "$dest/.complete" ] && done_

find_go() {
  for g in go /usr/local/go/bin/go "$HOME/go/bin/go" "$HOME/sdk/go/bin/go"; do
    if command -v "$g" >/dev/null 2>&1; then command -v "$g"; return 0; fi
  done
  return 1
}
GO="$(find_go)" || die "no Go toolchain found (Caddy $CADDY_VERSION needs Go >= 1.25). Install Go into /usr/local/go or put it on PATH."
# A go.mod asking for a newer Go than the one here is satisfied through the module proxy.
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0

mkdir -p "$cache_root"
exec 9>"$cache_root/.lock-caddy"
if ! flock -n 9; then
  log "another build-caddy.sh is building; waiting for it (lock $cache_root/.lock-caddy)"
  flock 9
fi
[ -f "$dest/.complete" ] && done_

start=$SECONDS
rm -rf "$dest.tmp"; mkdir -p "$dest.tmp/bin"
log "go install github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION (the first time takes minutes)"
GOBIN="$dest.tmp/bin" nice -n 10 "$GO" install -ldflags "-s -w" \
  "github.com/caddyserver/caddy/v2/cmd/caddy@$CADDY_VERSION" \
  || die "go install failed. Is the Go module proxy reachable?"
"$dest.tmp/bin/caddy" version >&2
rm -rf "$dest"; mv "$dest.tmp" "$dest"
echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s with $("$GO" env GOVERSION)" > "$dest/.complete"
log "built in $((SECONDS - start))s into $dest/bin"
done_

#!/usr/bin/env bash
# Fetches Gateway API's CRD manifests (config/crd/standard and config/crd/experimental of the Go
# module sigs.k8s.io/gateway-api at GATEWAY_API_VERSION, versions.env) once, through the Go module
# proxy, into a cache outside the repository:
#   ${PORTCULLIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/k8s}/gateway-api-<version>/crd/{standard,experimental}
# A complete cache directory (.complete) is never fetched again: then this takes well under a second.
#
# Usage: gateway-api-crds.sh [--print-env]   (--print-env: also print GATEWAY_API_CRDS=<dir>)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=/dev/null
source "$here/versions.env"
# shellcheck source=/dev/null
source "$here/../go-tool-cache.sh"

cache_root="${PORTCULLIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/k8s}"
# tool_finish prints $TOOL_DEST/bin/$TOOL_BINARY; the manifests live in crd/, not bin/.
tool_finish() {
  if [ "$TOOL_PRINT_ENV" = 1 ]; then echo "GATEWAY_API_CRDS=$TOOL_DEST/crd"; fi
  exit 0
}
tool_begin gateway-api "$cache_root/gateway-api-$GATEWAY_API_VERSION" GATEWAY_API_CRDS crd "$@"
tool_lock
log "downloading sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION (its CRD manifests only)"
# A scratch module cache: the module's files are read-only there and only config/crd is kept.
modcache="$TOOL_TMP/modcache"
dir="$(cd "$TOOL_TMP" && GOFLAGS=-mod=mod GOMODCACHE="$modcache" "$GO" mod download -json "sigs.k8s.io/gateway-api@$GATEWAY_API_VERSION" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -n "$dir" ] && [ -d "$dir/config/crd/experimental" ] || die "the module has no config/crd/experimental (got '$dir')"
mkdir -p "$TOOL_TMP/crd"
cp -r "$dir/config/crd/standard" "$dir/config/crd/experimental" "$TOOL_TMP/crd/"
chmod -R u+w "$modcache" && rm -rf "$modcache" "$TOOL_TMP/bin"
tool_done

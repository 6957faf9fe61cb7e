# Sourced by the scripts that build a peer from Go (Caddy, oauth2-proxy, the ext_authz client):
# one cache directory per tool and version outside the repository, a `.complete` marker (a
# complete directory is never rebuilt: with the tool cached a script is a no-op), a lock that
# serializes concurrent builders (a tier's global setup and a make target), and --print-env.
#
#   tool_begin NAME DEST ENV_VAR BINARY "$@"   parse the script's arguments; exit at once if cached
#   tool_lock                                  find Go, take the lock; exit if another builder finished
#   ... build into "$TOOL_TMP/bin" with "$GO" ...
#   tool_done                                  move the build into place, mark it complete, exit

log() { echo "$TOOL_NAME: $*" >&2; }
die() { echo "$TOOL_NAME: ERROR: $*" >&2; exit 1; }

tool_finish() {
  if [ "$TOOL_PRINT_ENV" = 1 ]; then echo "$TOOL_ENV_VAR=$TOOL_DEST/bin/$TOOL_BINARY"; fi
  exit 0
}

tool_begin() {
  TOOL_NAME="$1" TOOL_DEST="$2" TOOL_ENV_VAR="$3" TOOL_BINARY="$4"
  shift 4
  TOOL_PRINT_ENV=0
  local arg
  for arg in "$@"; do
    case "$arg" in
      --print-env) TOOL_PRINT_ENV=1 ;;
      *) die "unknown argument $arg" ;;
    esac
  done
  TOOL_TMP="$TOOL_DEST.tmp"
  if [ -f "$TOOL_DEST/.complete" ]; then tool_finish; fi
}

tool_lock() {
  local g
  GO=""
  for g in go /usr/local/go/bin/go "$HOME/go/bin/go" "$HOME/sdk/go/bin/go"; do
    if command -v "$g" >/dev/null 2>&1; then GO="$(command -v "$g")"; break; fi
  done
  [ -n "$GO" ] || die "no Go toolchain found. Install Go into /usr/local/go or put it on PATH."
  # A go.mod asking for a newer Go than the one here is satisfied through the module proxy.
  export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOFLAGS="-trimpath -buildvcs=false" CGO_ENABLED=0
  local root
  root="$(dirname "$TOOL_DEST")"
  mkdir -p "$root"
  exec 9>"$root/.lock-$TOOL_NAME"
  if ! flock -n 9; then
    log "another builder is at work; waiting for it (lock $root/.lock-$TOOL_NAME)"
    flock 9
  fi
  if [ -f "$TOOL_DEST/.complete" ]; then tool_finish; fi
  TOOL_START=$SECONDS
  rm -rf "$TOOL_TMP"
  mkdir -p "$TOOL_TMP/bin"
}

tool_done() {
  rm -rf "$TOOL_DEST"
  mv "$TOOL_TMP" "$TOOL_DEST"
  echo "built $(date -u +%FT%TZ) in $((SECONDS - TOOL_START))s with $("$GO" env GOVERSION)" > "$TOOL_DEST/.complete"
  log "built in $((SECONDS - TOOL_START))s into $TOOL_DEST/bin"
  tool_finish
}

#!/usr/bin/env bash
# Builds the Kubernetes tools of the k8s and e2e tiers from Go modules, once, into a cache
# outside the repository:
#   the seven Kubernetes commands (k8s.io/kubernetes, through the wrapper module in kubernetes/):
#     kube-apiserver and kubectl for the k8s tier; kubelet, kubeadm, kube-controller-manager,
#     kube-scheduler and kube-proxy for the kind node image of the e2e tier. One `go build` of all
#     seven shares the compile of the common packages, so both tiers cost one build.
#   etcd                      (go.etcd.io/etcd/server/v3, through the wrapper module in etcd/)
#   helm                      (go install helm.sh/helm/v4/cmd/helm)
#   kube-score                (go install github.com/zegl/kube-score/cmd/kube-score)
# With --node, also what only a kind node needs (the e2e tier):
#   kind                      (go install sigs.k8s.io/kind)
#   crictl                    (go install sigs.k8s.io/cri-tools/cmd/crictl)
#   coredns, pause            (the small modules in ../kind/coredns and ../kind/pause)
#   kube-router               (go install github.com/cloudnativelabs/kube-router/v2/cmd/kube-router:
#                             the NetworkPolicy enforcer of the offline kind cluster)
# Cache: ${PORTCULLIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/k8s}/<tool>-<version>/bin
# A tool whose cache directory is complete is not rebuilt: with everything cached this is a no-op
# that takes well under a second. Versions live in versions.env.
#
# Usage: build-tools.sh              build what is missing, print where the tools are
#        build-tools.sh --print-env  also print KUBE_APISERVER=... lines (for scripts)
#        build-tools.sh --node [--print-env]  also the kind node's tools (KIND=, CRICTL=, ...)
#        build-tools.sh --regen-go-mod  rewrite kubernetes/go.mod for KUBERNETES_VERSION
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=/dev/null
source "$here/versions.env"

cache_root="${PORTCULLIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/k8s}"
k8s_dir="$cache_root/kubernetes-$KUBERNETES_VERSION"
etcd_dir="$cache_root/etcd-$ETCD_VERSION"
helm_dir="$cache_root/helm-$HELM_VERSION"
kube_score_dir="$cache_root/kube-score-$KUBE_SCORE_VERSION"
kind_dir="$cache_root/kind-$KIND_VERSION"
crictl_dir="$cache_root/crictl-$CRICTL_VERSION"
coredns_dir="$cache_root/coredns-$COREDNS_VERSION"
kube_router_dir="$cache_root/kube-router-$KUBE_ROUTER_VERSION"
pause_dir="$cache_root/pause-$(sha256sum "$here/../kind/pause/main.go" | cut -c1-12)"
K8S_COMMANDS=(kube-apiserver kubectl kubelet kubeadm kube-controller-manager kube-scheduler kube-proxy)

log() { echo "k8s-tools: $*" >&2; }
die() { echo "k8s-tools: ERROR: $*" >&2; exit 1; }

node=0; mode=""
for arg in "$@"; do
  case "$arg" in
    --node) node=1 ;;
    --print-env | --regen-go-mod) mode="$arg" ;;
    *) die "unknown argument $arg" ;;
  esac
done

print_env() {
  echo "KUBERNETES_BIN=$k8s_dir/bin"
  echo "KUBE_APISERVER=$k8s_dir/bin/kube-apiserver"
  echo "KUBECTL=$k8s_dir/bin/kubectl"
  echo "ETCD=$etcd_dir/bin/etcd"
  echo "HELM=$helm_dir/bin/helm"
  echo "KUBE_SCORE=$kube_score_dir/bin/kube-score"
  if [ "$node" = 1 ]; then
    echo "KIND=$kind_dir/bin/kind"
    echo "CRICTL=$crictl_dir/bin/crictl"
    echo "COREDNS=$coredns_dir/bin/coredns"
    echo "PAUSE=$pause_dir/bin/pause"
    echo "KUBE_ROUTER=$kube_router_dir/bin/kube-router"
  fi
}

# A cache directory is complete when its build finished (.complete) and, for the Kubernetes one,
# every command is there (a cache made when only two were built is rebuilt once).
complete() { [ -f "$1/.complete" ]; }
k8s_complete() {
  complete "$k8s_dir" || return 1
  local c; for c in "${K8S_COMMANDS[@]}"; do [ -x "$k8s_dir/bin/$c" ] || return 1; done
}

all_cached() {
  k8s_complete && complete "$etcd_dir" && complete "$helm_dir" && complete "$kube_score_dir" || return 1
  [ "$node" = 0 ] || { complete "$kind_dir" && complete "$crictl_dir" && complete "$coredns_dir" && complete "$pause_dir" && complete "$kube_router_dir"; }
}

# cluster.ts makes its certificates with openssl (a Debian package; installed when missing).
"$repo/scripts/ensure-system-deps.sh" openssl:openssl

# Fast path: nothing to do, no Go needed.
if [ "$mode" != "--regen-go-mod" ] && all_cached; then
  [ "$mode" = "--print-env" ] && print_env
  exit 0
fi

# --- Go toolchain -------------------------------------------------------------------------
find_go() {
  for g in go /usr/local/go/bin/go "$HOME/go/bin/go" "$HOME/sdk/go/bin/go"; do
    if command -v "$g" >/dev/null 2>&1; then command -v "$g"; return 0; fi
  done
  return 1
}
GO="$(find_go)" || die "no Go toolchain found (need Go >= 1.26 for Kubernetes $KUBERNETES_VERSION). Install Go into /usr/local/go or put it on PATH."
gov="$("$GO" env GOVERSION)"; gov="${gov#go}"
gomaj="${gov%%.*}"; gomin="${gov#*.}"; gomin="${gomin%%.*}"
if [ "$gomaj" -lt 1 ] || { [ "$gomaj" -eq 1 ] && [ "$gomin" -lt 26 ]; }; then
  # Go downloads a newer toolchain through the module proxy when a go.mod asks for it.
  log "Go $gov is older than 1.26; relying on GOTOOLCHAIN=auto to fetch a newer toolchain from the module proxy"
  export GOTOOLCHAIN=auto
fi
go_dir="$(dirname "$GO")"
export PATH="$go_dir:$PATH"
export GOFLAGS="-trimpath -buildvcs=false"
export CGO_ENABLED=0

regen_go_mod() {
  local v="$KUBERNETES_VERSION" minor="0.${KUBERNETES_VERSION#v1.}"
  log "regenerating kubernetes/go.mod for k8s.io/kubernetes $v (staging modules at v$minor)"
  local modfile
  modfile="$(cd "$here/kubernetes" && GOFLAGS=-mod=mod "$GO" mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  [ -f "$modfile" ] || die "could not download k8s.io/kubernetes@$v from the module proxy"
  {
    echo "// Wrapper module that builds kube-apiserver and kubectl from k8s.io/kubernetes $v."
    echo "// k8s.io/kubernetes replaces its k8s.io/* staging modules by path, so a plain go install fails;"
    echo "// here every staging module is replaced by its published v$minor. Generated by"
    echo "// build-tools.sh --regen-go-mod; go.sum beside it pins the whole build."
    echo "module portcullis.dev/test/k8s-tools/kubernetes"
    echo
    echo "go $(sed -n 's/^go //p' "$modfile")"
    echo
    echo "require k8s.io/kubernetes $v"
    echo
    echo "replace ("
    sed -n '/^replace (/,/^)/p' "$modfile" | sed -n 's#^\s*\(k8s.io/[a-z0-9./-]*\) => ./staging/.*#\t\1 => \1 v'"$minor"'#p'
    echo ")"
  } > "$here/kubernetes/go.mod"
  rm -f "$here/kubernetes/go.sum"
}

if [ "$mode" = "--regen-go-mod" ]; then
  regen_go_mod
  exit 0
fi

# --- building -------------------------------------------------------------------------------
mkdir -p "$cache_root"
exec 9>"$cache_root/.lock"
if ! flock -n 9; then
  log "another build-tools.sh is building; waiting for it (lock $cache_root/.lock)"
  flock 9
fi

# Builds a wrapper module: copies go.mod/go.sum into a scratch dir in the cache so the repository
# is never modified, builds the packages there into <dest>/bin, then marks <dest> complete.
build_wrapper() { # name srcdir dest ldflags pkg...
  local name="$1" src="$2" dest="$3" ldflags="$4"; shift 4
  if [ "$name" = kubernetes ]; then k8s_complete && { log "$name: cached in $dest/bin"; return 0; }
  else complete "$dest" && { log "$name: cached in $dest/bin"; return 0; }; fi
  local work="$cache_root/.build-$name" start=$SECONDS
  rm -rf "$work" "$dest.tmp"; mkdir -p "$work" "$dest.tmp/bin"
  cp -r "$src/." "$work/"
  log "$name: building $* (this takes a while the first time; 2 cores: ~10-40 min)"
  (cd "$work" && nice -n 10 "$GO" build -mod=mod -ldflags "$ldflags" -o "$dest.tmp/bin/" "$@") \
    || die "$name: go build failed (see above). Is the Go module proxy reachable?"
  # etcd's main package is go.etcd.io/etcd/server/v3: go names the binary "server"; the local
  # modules (pause, coredns) build package "." which go names after the module's last element.
  if [ "$name" = etcd ]; then mv "$dest.tmp/bin/server" "$dest.tmp/bin/etcd"; fi
  # A module with dependencies pins them in go.sum (pause has none).
  if [ -f "$work/go.sum" ]; then
    cp "$work/go.sum" "$dest.tmp/go.sum"
    [ -f "$src/go.sum" ] || log "$name: $src/go.sum is missing; the one this build resolved is $dest/go.sum (commit it)"
  fi
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
  echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s with $("$GO" env GOVERSION)" > "$dest/.complete"
  log "$name: built in $((SECONDS - start))s into $dest/bin"
  rm -rf "$work"
}

k8s_minor="${KUBERNETES_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
build_wrapper kubernetes "$here/kubernetes" "$k8s_dir" "$k8s_ldflags" \
  "${K8S_COMMANDS[@]/#/k8s.io/kubernetes/cmd/}"

build_wrapper etcd "$here/etcd" "$etcd_dir" \
  "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${ETCD_VERSION}" go.etcd.io/etcd/server/v3


if complete "$helm_dir"; then
  log "helm: cached in $helm_dir/bin"
else
  start=$SECONDS
  rm -rf "$helm_dir.tmp"; mkdir -p "$helm_dir.tmp/bin"
  log "helm: go install helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
  GOBIN="$helm_dir.tmp/bin" nice -n 10 "$GO" install -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v4/cmd/helm@$HELM_VERSION" || die "helm: go install failed"
  rm -rf "$helm_dir"; mv "$helm_dir.tmp" "$helm_dir"
  echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s" > "$helm_dir/.complete"
  log "helm: built in $((SECONDS - start))s"
fi

# go install of a published command into <dest>/bin, once.
go_install() { # name dest ldflags module@version
  local name="$1" dest="$2" ldflags="$3" pkg="$4" start=$SECONDS
  complete "$dest" && { log "$name: cached in $dest/bin"; return 0; }
  rm -rf "$dest.tmp"; mkdir -p "$dest.tmp/bin"
  log "$name: go install $pkg"
  GOBIN="$dest.tmp/bin" nice -n 10 "$GO" install -ldflags "$ldflags" "$pkg" || die "$name: go install failed"
  rm -rf "$dest"; mv "$dest.tmp" "$dest"
  echo "built $(date -u +%FT%TZ) in $((SECONDS - start))s" > "$dest/.complete"
  log "$name: built in $((SECONDS - start))s"
}

go_install kube-score "$kube_score_dir" "-s -w -X main.version=$KUBE_SCORE_VERSION" "github.com/zegl/kube-score/cmd/kube-score@$KUBE_SCORE_VERSION"

if [ "$node" = 1 ]; then
  go_install kind "$kind_dir" "-s -w" "sigs.k8s.io/kind@$KIND_VERSION"
  go_install crictl "$crictl_dir" "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
  build_wrapper coredns "$here/../kind/coredns" "$coredns_dir" "-s -w" .
  build_wrapper pause "$here/../kind/pause" "$pause_dir" "-s -w" .
  go_install kube-router "$kube_router_dir" "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$KUBE_ROUTER_VERSION" \
    "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
fi

"$k8s_dir/bin/kube-apiserver" --version >&2
# Not `| head -1`: under pipefail, etcd writing its next line after head exited is a SIGPIPE (141).
etcd_version="$("$etcd_dir/bin/etcd" --version 2>&1)"
echo "${etcd_version%%$'\n'*}" >&2
"$helm_dir/bin/helm" version --short >&2
[ "$mode" = "--print-env" ] && print_env
exit 0

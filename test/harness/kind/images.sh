#!/usr/bin/env bash
# The images the e2e tier needs where no image registry can be reached, made from Debian packages,
# the npm registry and the Go module proxy, in the private dockerd (DOCKER_HOST from dockerd.sh):
#
#   images.sh node       the kind node image portcullis-kind/node:<Kubernetes version>-<recipe>
#                        (what `kind build node-image` makes, without its downloads): a kind base
#                        image from a Debian root filesystem and kind's own files, the Kubernetes
#                        commands, and every image kubeadm pulls, built from the cached binaries
#                        and pinned in the node's containerd, plus kube-router (the NetworkPolicy
#                        enforcer, kube-router.yaml). Prints the tag.
#   images.sh rootfs     only the two Debian root filesystems the others start from
#   images.sh standins   node:24-bookworm-slim and redis:7-alpine, the public base images the
#                        project's Dockerfiles and chart use, made locally under the same names.
#
# Everything is cached: the root filesystem in the cache folder by its package list, the images in
# the private dockerd's data root by tag; a step whose output exists is skipped.
#
# Kernel settings: a kind node is a privileged container and shares the host's kernel settings.
# kind's node would apply Debian's sysctl.d files and kubelet would set its "kernel tunables"; the
# base image masks systemd-sysctl, applies only kind's per-network-namespace files, and shows kubelet
# files already holding the values it wants (bind mounts inside the node), so nothing host-wide
# is written. The e2e tier compares `sysctl -a` before and after to prove it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
# shellcheck source=/dev/null
source "$repo/test/harness/k8s/versions.env"
cache_root="${PORTCULLIS_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/k8s}"
[ -n "${DOCKER_HOST:-}" ] || eval "export $("$here/dockerd.sh" env)"

log() { echo "images.sh: $*" >&2; }
die() { echo "images.sh: ERROR: $*" >&2; exit 1; }
has_image() { docker image inspect "$1" >/dev/null 2>&1; }
# A stand-in made by this recipe (an older one is made again).
current_standin() { [ "$(docker image inspect -f '{{index .Config.Labels "portcullis.recipe"}}' "$1" 2>/dev/null)" = "$recipe" ]; }
timed() { local t=$SECONDS; "$@"; log "$1 took $((SECONDS - t)) s"; }

# Debian packages of a kind node (systemd as init, containerd and runc, CNI plugins, iptables for
# kube-proxy, the tools kubeadm's preflight and kind's entrypoint call).
NODE_PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,conntrack,ca-certificates,jq,procps,curl,e2fsprogs,socat,ebtables,ipset,less
# The recipe's fingerprint: a change to this script or its files (or kube-router's version) makes new image tags.
recipe="$({ cat "${BASH_SOURCE[0]}" "$here/node/"*; echo "$KUBE_ROUTER_VERSION"; } | sha256sum | cut -c1-10)"
# The stand-ins start from a small root filesystem (Debian's minbase and CA certificates), so that
# their sizes are close to the public images they stand in for.
SLIM_PACKAGES=ca-certificates,libssl3
rootfs_for() { echo "$cache_root/rootfs-bookworm-$(echo "$1" | sha256sum | cut -c1-10)"; }
ROOTFS="$(rootfs_for "$NODE_PACKAGES")"
SLIM_ROOTFS="$(rootfs_for "$SLIM_PACKAGES")"
BASE_IMAGE="portcullis-kind/base:bookworm-$recipe"
# kind's entrypoint, then systemd; ours first (node/entrypoint.sh: host-wide settings stay).
NODE_ENTRYPOINT='[ "/kind/bin/portcullis-entrypoint.sh", "/usr/local/bin/entrypoint", "/sbin/init" ]'
NODE_IMAGE="portcullis-kind/node:$KUBERNETES_VERSION-$recipe"
# Inside the node only (never pulled): the name kube-router.yaml's DaemonSet runs.
KUBE_ROUTER_IMAGE="portcullis-kind/kube-router:$KUBE_ROUTER_VERSION"

# The Debian archive apt uses here (enabled .list/.sources files only).
apt_mirror() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    grep -oE '^(URIs:|deb) +https?://[^ ]+' | grep -oE 'https?://[^ ]+' | grep -E '/debian/?$' | head -n1 || true
}

make_rootfs() { # packages (comma-separated)
  local dir; dir="$(rootfs_for "$1")"
  [ -f "$dir/.complete" ] && return 0
  "$repo/scripts/ensure-system-deps.sh" debootstrap:debootstrap
  local mirror; mirror="$(apt_mirror)"; [ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list*"
  log "debootstrap bookworm from $mirror into $dir (about a minute)"
  rm -rf "$dir.tmp"; mkdir -p "$dir.tmp"
  debootstrap --variant=minbase --include="$1" bookworm "$dir.tmp" "$mirror" >"$dir.log" 2>&1 ||
    { tail -n 20 "$dir.log" >&2; die "debootstrap failed (log $dir.log)"; }
  rm -rf "$dir.tmp/var/cache/apt/archives/"*.deb "$dir.tmp/var/lib/apt/lists/"*
  touch "$dir.tmp/.complete"
  rm -rf "$dir"; mv "$dir.tmp" "$dir"
}

# kind's base image (kindest/base) from our root filesystem: kind's files from its Go module,
# Debian's containerd, runc and CNI plugins where kind ships its own builds.
make_base_image() {
  has_image "$BASE_IMAGE" && return 0
  local kind_files r
  kind_files="$(cd /tmp && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)/images/base/files"
  [ -d "$kind_files" ] || die "kind's base files are missing ($kind_files)"
  r="$(mktemp -d "$cache_root/base.XXXXXX")"
  cp -a "$ROOTFS/." "$r/"; rm -f "$r/.complete"
  install -d -m 0755 "$r/kind/bin" "$r/LICENSES" "$r/etc/systemd/system/kubelet.service.d" "$r/etc/containerd"
  install -m 0755 "$kind_files"/usr/local/bin/* "$r/usr/local/bin/"
  install -m 0755 "$kind_files"/kind/bin/* "$r/kind/bin/"
  install -m 0644 "$kind_files/kind/README.txt" "$r/kind/"
  install -m 0644 "$kind_files/etc/crictl.yaml" "$r/etc/"
  install -m 0644 "$kind_files/etc/containerd/config.toml" "$r/etc/containerd/"
  install -m 0644 "$kind_files/etc/default/kubelet" "$r/etc/default/"
  install -m 0644 "$kind_files"/etc/sysctl.d/* "$r/etc/sysctl.d/"
  install -m 0644 "$kind_files"/etc/systemd/system/*.service "$kind_files"/etc/systemd/system/*.slice "$r/etc/systemd/system/"
  install -m 0644 "$kind_files"/etc/systemd/system/kubelet.service.d/* "$r/etc/systemd/system/kubelet.service.d/"
  # Debian installs containerd in /usr/bin; no fuse-overlayfs (kind uses it only when rootless).
  sed -i 's#/usr/local/bin/containerd#/usr/bin/containerd#' "$r/etc/systemd/system/containerd.service"
  rm -f "$r/etc/systemd/system/containerd-fuse-overlayfs.service"
  sed -i '/^\[proxy_plugins\]/,/^  address/d' "$r/etc/containerd/config.toml"
  # Without CAP_SYS_RESOURCE nothing inside may lower an oom_score_adj (kubelet asks -997 for
  # critical pods) or raise a hard rlimit above the machine's.
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' "$r/etc/containerd/config.toml"
  install -m 0644 -D "$here/node/containerd-limits.conf" "$r/etc/systemd/system/containerd.service.d/10-limits.conf"
  install -m 0644 -D "$here/node/journald-limits.conf" "$r/etc/systemd/system/systemd-journald.service.d/10-limits.conf"
  # Host-wide kernel settings stay untouched (see the header).
  install -m 0644 "$here/node/netns-sysctl.service" "$r/etc/systemd/system/portcullis-netns-sysctl.service"
  install -m 0755 "$here/node/kubelet-tunables.sh" "$r/kind/bin/portcullis-kubelet-tunables.sh"
  install -m 0644 "$here/node/kubelet-tunables.conf" "$r/etc/systemd/system/kubelet.service.d/12-portcullis.conf"
  install -m 0755 "$here/node/entrypoint.sh" "$r/kind/bin/portcullis-entrypoint.sh"
  # CNI: no kindnetd image can be built here; a ptp network from Debian's plugins (one node).
  mkdir -p "$r/opt/cni" "$r/etc/cni/net.d"; rm -rf "$r/opt/cni/bin"; ln -s /usr/lib/cni "$r/opt/cni/bin"
  install -m 0644 "$here/node/10-ptp.conflist" "$r/etc/cni/net.d/10-ptp.conflist"
  # kind's Dockerfile trims systemd the same way.
  chroot "$r" /bin/bash -euc '
    find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete
    rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
      /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
      /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/*
    grep -q "^ReadKMsg=no" /etc/systemd/journald.conf || echo ReadKMsg=no >> /etc/systemd/journald.conf
    ln -sf /usr/lib/systemd/systemd /sbin/init
    systemctl enable kubelet.service containerd.service undo-mount-hacks.service portcullis-netns-sysctl.service
    systemctl mask systemd-binfmt.service systemd-sysctl.service
    ctr oci spec | jq ".hooks.createContainer[.hooks.createContainer | length] |= . + {\"path\": \"/kind/bin/mount-product-files.sh\"}" |
      jq "del(.process.rlimits)" > /etc/containerd/cri-base.json
    apt-get clean; rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin'
  tar -C "$r" -c . | docker import --change 'ENV container=docker' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENTRYPOINT $NODE_ENTRYPOINT" - "$BASE_IMAGE-nostop" >/dev/null
  rm -rf "$r"
  # docker import cannot set STOPSIGNAL; the classic builder can, from a local image, offline.
  printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$BASE_IMAGE-nostop" | DOCKER_BUILDKIT=0 docker build -q -t "$BASE_IMAGE" - >/dev/null
  docker rmi "$BASE_IMAGE-nostop" >/dev/null
}

# An image holding one static binary and nothing else (what kubeadm's images amount to).
binary_image() { # tag source path-in-image
  local d; d="$(mktemp -d)"
  install -D -m 0755 "$2" "$d$3"
  mkdir -p "$d/tmp" "$d/etc"; chmod 1777 "$d/tmp"
  printf 'root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532::/:/sbin/nologin\n' > "$d/etc/passwd"
  tar -C "$d" -c . | docker import --change "ENTRYPOINT [\"$3\"]" - "$1" >/dev/null
  rm -rf "$d"
}

make_node_image() {
  has_image "$NODE_IMAGE" && return 0
  local images want pause c
  mapfile -t images < <("$KUBERNETES_BIN/kubeadm" config images list --kubernetes-version "$KUBERNETES_VERSION")
  want() { printf '%s\n' "${images[@]}" | grep "/$1:"; }
  # The tags are what kubeadm asks for; etcd and CoreDNS inside are the versions built here.
  for c in kube-apiserver kube-controller-manager kube-scheduler; do binary_image "$(want "$c")" "$KUBERNETES_BIN/$c" "/usr/local/bin/$c"; done
  binary_image "$(want etcd)" "$ETCD" /usr/local/bin/etcd
  binary_image "$(want coredns)" "$COREDNS" /coredns
  pause="$(want pause)"; binary_image "$pause" "$PAUSE" /pause
  # kube-proxy's iptables mode needs iptables and conntrack: the base image plus the binary.
  c="$(docker create "$BASE_IMAGE")"
  docker cp "$KUBERNETES_BIN/kube-proxy" "$c:/usr/local/bin/kube-proxy"
  docker commit --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]' "$c" "$(want kube-proxy)" >/dev/null
  docker rm "$c" >/dev/null
  # The NetworkPolicy enforcer (kube-router.yaml runs it): its firewall drives the node's iptables
  # and ipset, so the same base image plus the binary, preloaded like kubeadm's images.
  c="$(docker create "$BASE_IMAGE")"
  docker cp "$KUBE_ROUTER" "$c:/usr/local/bin/kube-router"
  docker commit --change 'ENTRYPOINT ["/usr/local/bin/kube-router"]' "$c" "$KUBE_ROUTER_IMAGE" >/dev/null
  docker rm "$c" >/dev/null
  images+=("$KUBE_ROUTER_IMAGE")

  name="portcullis-node-build-$$"
  docker run -d --name "$name" --privileged --entrypoint=sleep "$BASE_IMAGE" infinity >/dev/null
  trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
  for c in kubeadm kubelet kubectl; do docker cp "$KUBERNETES_BIN/$c" "$name:/usr/bin/$c"; done
  docker cp "$CRICTL" "$name:/usr/local/bin/crictl"
  docker exec "$name" bash -euc "chown root:root /usr/bin/kube*; chmod 0755 /usr/bin/kube*; echo -n $KUBERNETES_VERSION > /kind/version
    sed -i 's#sandbox_image = .*#sandbox_image = \"$pause\"#' /etc/containerd/config.toml"
  # Preload kubeadm's images into the node's containerd, pinned so kubelet never collects them.
  docker exec "$name" bash -c 'containerd >/tmp/containerd.log 2>&1 & for i in $(seq 100); do [ -S /run/containerd/containerd.sock ] && break; sleep 0.1; done; ctr version >/dev/null'
  docker save "${images[@]}" | docker exec -i "$name" ctr --namespace=k8s.io images import \
    --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null
  # (sleep is PID 1 here and reaps nothing: wait until containerd is gone or a zombie)
  docker exec "$name" bash -c 'pkill -x containerd; while ps -C containerd -o stat= | grep -qv Z; do sleep 0.1; done; rm -f /tmp/containerd.log'
  docker commit --change "ENTRYPOINT $NODE_ENTRYPOINT" "$name" "$NODE_IMAGE" >/dev/null
  docker rmi "${images[@]}" >/dev/null
}

cmd_node() {
  mkdir -p "$cache_root"
  eval "$("$repo/test/harness/k8s/build-tools.sh" --node --print-env)"
  exec 9>"$cache_root/.node-image.lock"; flock 9
  if ! has_image "$NODE_IMAGE"; then
    timed make_rootfs "$NODE_PACKAGES"
    timed make_base_image
    timed make_node_image
    log "built $NODE_IMAGE ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | numfmt --to=iec))"
    # Images of an earlier recipe are not used again.
    # (two passes: a base image goes only once the node image made from it is gone)
    for _ in 1 2; do
      docker image ls --format '{{.Repository}}:{{.Tag}}' | grep -E '^portcullis-kind/(base|node):' |
        grep -v -e "$NODE_IMAGE" -e "$BASE_IMAGE" | xargs -r -n1 docker rmi >/dev/null 2>&1 || true
    done
    docker image prune -f >/dev/null
  fi
  echo "$NODE_IMAGE"
}

# The public base images, made locally under their public names:
#   node:24-bookworm-slim  Debian bookworm + the Node 24 the project provisions + npm, user node
#                          (1000:1000). Builds here reach the npm registry through a
#                          TLS-intercepting proxy, so the host's CA bundle is added for npm
#                          (NODE_EXTRA_CA_CERTS): a concern of this stand-in only.
#   redis:7-alpine         Debian's redis-server with the official image's entrypoint contract
#                          (arguments that start with "-" go to redis-server), user redis (999).
cmd_standins() {
  mkdir -p "$cache_root"
  make_rootfs "$SLIM_PACKAGES"
  local node_bin w
  node_bin="$("$repo/scripts/ensure-node.sh")"
  if ! current_standin node:24-bookworm-slim; then
    w="$(mktemp -d "$cache_root/standin.XXXXXX")"
    cp -a "$SLIM_ROOTFS/." "$w/"; rm -f "$w/.complete"
    install -m 0755 "$node_bin/node" "$w/usr/local/bin/node"
    mkdir -p "$w/usr/local/lib/node_modules"
    cp -a "$(dirname "$(readlink -f "$(command -v npm)")")/.." "$w/usr/local/lib/node_modules/npm"
    ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$w/usr/local/bin/npm"
    ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$w/usr/local/bin/npx"
    echo 'node:x:1000:' >> "$w/etc/group"
    echo 'node:x:1000:1000::/home/node:/bin/bash' >> "$w/etc/passwd"
    mkdir -p "$w/home/node"; chown 1000:1000 "$w/home/node"
    cp /etc/ssl/certs/ca-certificates.crt "$w/etc/ssl/certs/ca-certificates.crt"
    tar -C "$w" -c . | docker import --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change "ENV NODE_VERSION=$("$node_bin/node" -p process.versions.node)" \
      --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
      --change 'CMD ["node"]' --change "LABEL portcullis.recipe=$recipe" - node:24-bookworm-slim >/dev/null
    rm -rf "$w"; log "made node:24-bookworm-slim"
  fi
  if ! current_standin redis:7-alpine; then
    w="$(mktemp -d "$cache_root/standin.XXXXXX")"
    mkdir -p "$w/debs" "$w/x" "$w/root"
    (cd "$w/debs" && apt-get download redis-server redis-tools libjemalloc2 liblzf1 libatomic1 >/dev/null 2>&1) ||
      { apt-get update -qq >&2; (cd "$w/debs" && apt-get download redis-server redis-tools libjemalloc2 liblzf1 libatomic1 >/dev/null); }
    for d in "$w"/debs/*.deb; do dpkg-deb -x "$d" "$w/x"; done
    cp -a "$SLIM_ROOTFS/." "$w/root/"; rm -f "$w/root/.complete"
    cp -a "$w/x/usr/." "$w/root/usr/"
    [ -d "$w/x/etc" ] && cp -a "$w/x/etc/." "$w/root/etc/"
    install -m 0755 "$here/node/redis-entrypoint.sh" "$w/root/usr/local/bin/docker-entrypoint.sh"
    echo 'redis:x:999:999::/data:/bin/false' >> "$w/root/etc/passwd"
    echo 'redis:x:999:' >> "$w/root/etc/group"
    mkdir -p "$w/root/data"
    tar -C "$w/root" -c . | docker import --change 'WORKDIR /data' --change 'EXPOSE 6379' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENTRYPOINT ["docker-entrypoint.sh"]' --change 'CMD ["redis-server"]' \
      --change "LABEL portcullis.recipe=$recipe" - redis:7-alpine >/dev/null
    rm -rf "$w"; log "made redis:7-alpine"
  fi
}

case "${1:-}" in
  rootfs) mkdir -p "$cache_root"; make_rootfs "$NODE_PACKAGES"; make_rootfs "$SLIM_PACKAGES" ;;
  node) cmd_node ;;
  standins) cmd_standins ;;
  *) echo "usage: images.sh node|standins" >&2; exit 64 ;;
esac

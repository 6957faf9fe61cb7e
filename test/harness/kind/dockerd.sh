#!/usr/bin/env bash
# A private Docker engine for the e2e tier, owned by this script and nobody else's:
#   its own socket, data root, exec root, cgroup parent and bridge (pcbr0), and the "kind" network
#   on its own bridge (pckind0) and subnet. A Docker engine already on the machine is never used,
#   restarted or stopped from here, and no bridge this script did not create is touched.
#
#   dockerd.sh start   start it (idempotent: an engine of ours that answers is reused)
#   dockerd.sh stop    stop it by its pid, then delete the two bridges it made
#   dockerd.sh env     print DOCKER_HOST=... for the engine (whether or not it runs)
#
# Why each setting:
#   --ip-forward=false --iptables=false --ip-masq=false: the host's kernel settings and firewall
#     stay as they were (everything the tier does stays on this machine; kind's port mappings go
#     through docker-proxy, and pods forward inside the node's own network namespace).
#   -b pcbr0: a second engine started with --bridge=none deletes the docker0 link of the first.
#   runc-bounded as the default runtime: --privileged asks for every capability, and a machine
#     whose bounding set lacks one (CAP_SYS_RESOURCE here) makes runc fail; see that file.
#   --live-restore: the kind node survives a restart of the engine.
#   setsid: the engine does not die with the shell that started it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
state="${PORTCULLIS_E2E_STATE:-${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/e2e}"
D="$state/docker"
sock="$D/docker.sock"
pidfile="$D/dockerd.pid"
BRIDGE=pcbr0 BRIDGE_NET=10.211.0.1/24
KIND_BRIDGE=pckind0 KIND_SUBNET=10.210.0.0/24 KIND_GATEWAY=10.210.0.1

log() { echo "dockerd.sh: $*" >&2; }
die() { echo "dockerd.sh: ERROR: $*" >&2; exit 1; }

answers() { docker -H "unix://$sock" info >/dev/null 2>&1; }

# The pid in our pidfile, when that process is a dockerd using our data root.
our_pid() {
  [ -f "$pidfile" ] || return 1
  local pid; pid="$(cat "$pidfile")"
  [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q -- "--data-root $D/data" || return 1
  echo "$pid"
}

# A subnet must not overlap a route the machine already has (compared by its first two octets).
subnet_free() { ! ip -4 route show | grep -q "^${1%.*.*}\."; }

cmd_start() {
  "$repo/scripts/ensure-system-deps.sh" dockerd:docker.io jq:jq ip:iproute2
  mkdir -p "$D/data" "$D/exec"
  if our_pid >/dev/null && answers; then log "already running (pid $(our_pid))"; return 0; fi
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    subnet_free "$BRIDGE_NET" || die "$BRIDGE_NET overlaps a route on this machine"
    ip link add "$BRIDGE" type bridge
    ip addr add "$BRIDGE_NET" dev "$BRIDGE"
    ip link set "$BRIDGE" up
  fi
  # The runtime lives beside the engine's data, not in the work tree the engine may outlive.
  install -m 0755 "$here/runc-bounded" "$D/runc-bounded"
  log "starting a private dockerd (socket $sock, log $D/dockerd.log)"
  setsid dockerd --data-root "$D/data" --exec-root "$D/exec" --pidfile "$pidfile" \
    -H "unix://$sock" -b "$BRIDGE" --iptables=false --ip6tables=false --ip-masq=false --ip-forward=false \
    --cgroup-parent=portcullis-e2e --live-restore \
    --add-runtime portcullis-runc="$D/runc-bounded" --default-runtime portcullis-runc \
    >"$D/dockerd.log" 2>&1 < /dev/null &
  local i
  for i in $(seq 120); do answers && break; sleep 0.5; done
  answers || { tail -n 30 "$D/dockerd.log" >&2; die "the private dockerd did not answer within 60 s"; }
  # kind puts its nodes on the network named "kind", creating it when missing: made here first,
  # on a subnet and bridge of ours, IPv4 only, without NAT.
  if ! docker -H "unix://$sock" network inspect kind >/dev/null 2>&1; then
    subnet_free "$KIND_SUBNET" || die "$KIND_SUBNET overlaps a route on this machine"
    docker -H "unix://$sock" network create -d bridge --subnet "$KIND_SUBNET" --gateway "$KIND_GATEWAY" \
      -o com.docker.network.bridge.name="$KIND_BRIDGE" \
      -o com.docker.network.bridge.enable_ip_masquerade=false -o com.docker.network.driver.mtu=1500 kind >/dev/null
  fi
  log "up: $(docker -H "unix://$sock" info --format '{{.ServerVersion}}, runtime {{.DefaultRuntime}}, pid '"$(our_pid)")"
}

cmd_stop() {
  local pid
  if pid="$(our_pid)"; then
    log "stopping the private dockerd (pid $pid)"
    kill -TERM "$pid"
    local i
    for i in $(seq 60); do [ -d "/proc/$pid" ] || break; sleep 0.5; done
    if [ -d "/proc/$pid" ]; then log "still running after 30 s: SIGKILL"; kill -KILL "$pid"; fi
  fi
  rm -f "$pidfile"
  # What the engine leaves mounted after it exits (its bind mount of the host's network
  # namespace, exec-root/netns/default) is unmounted, deepest first.
  local m
  awk -v root="$D/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
    umount -l "$m" && log "unmounted $m"
  done
  local b
  for b in "$KIND_BRIDGE" "$BRIDGE"; do
    if ip link show "$b" >/dev/null 2>&1; then ip link delete "$b" && log "deleted bridge $b"; fi
  done
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  env) echo "DOCKER_HOST=unix://$sock" ;;
  *) echo "usage: dockerd.sh start|stop|env" >&2; exit 64 ;;
esac

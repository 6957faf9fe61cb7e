#!/usr/bin/env bash
# The whole thing on a kind cluster (needs a Docker engine; not part of `make test`).
#   kind.sh images   build the five images (portcullis/<program>:$TAG)
#   kind.sh up       create the kind cluster $CLUSTER (if missing)
#   kind.sh load     load the images into it
#   kind.sh deploy   helm upgrade --install the chart into $NAMESPACE
#   kind.sh e2e      up + images + load + deploy, then the specification's 30-request scenario
#                    through a port-forward and the OAuth code flow, then tear down
#                    (KEEP_CLUSTER=1 keeps the cluster)
# Where Docker is missing it says so and exits 2.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
CLUSTER="${CLUSTER:-portcullis}"
NAMESPACE="${NAMESPACE:-portcullis-system}"
E2E_NAMESPACE="${E2E_NAMESPACE:-portcullis-e2e}"
TAG="${TAG:-dev}"
KIND_VERSION="${KIND_VERSION:-v0.33.0}"
PROGRAMS=(operator sidecar services/auth-server services/user-service services/demo-client)

log() { echo "kind.sh: $*" >&2; }
die() { echo "kind.sh: ERROR: $*" >&2; exit 1; }

need_docker() {
  command -v docker >/dev/null 2>&1 || { log "docker is not installed: the kind targets need a Docker engine (they are not part of make test)."; exit 2; }
  docker info >/dev/null 2>&1 || { log "no Docker engine answers (docker info failed): the kind targets need a running Docker daemon; on this machine only the client exists."; exit 2; }
}

# Tools: kind (go install when missing), kubectl and helm from the k8s tier's cache.
tools() {
  eval "$(test/harness/k8s/build-tools.sh --print-env)"
  KUBECTL_BIN="$KUBECTL"; HELM_BIN="$HELM"
  if command -v kind >/dev/null 2>&1; then
    KIND_BIN="$(command -v kind)"
  else
    local dir="${XDG_CACHE_HOME:-$HOME/.cache}/portcullis/kind-$KIND_VERSION/bin"
    if [ ! -x "$dir/kind" ]; then
      command -v go >/dev/null 2>&1 || PATH="/usr/local/go/bin:$PATH"
      log "installing kind $KIND_VERSION with go install into $dir"
      GOBIN="$dir" GOFLAGS=-trimpath go install "sigs.k8s.io/kind@$KIND_VERSION"
    fi
    KIND_BIN="$dir/kind"
  fi
}

image_name() { echo "portcullis/$(basename "$1"):$TAG"; }

cmd_images() {
  need_docker
  for p in "${PROGRAMS[@]}"; do
    [ -f "$p/Dockerfile" ] || die "$p/Dockerfile is missing"
    log "building $(image_name "$p")"
    docker build -f "$p/Dockerfile" -t "$(image_name "$p")" .
  done
}

cmd_up() {
  need_docker; tools
  if "$KIND_BIN" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "cluster $CLUSTER exists"
  else
    "$KIND_BIN" create cluster --name "$CLUSTER" --wait 120s
  fi
}

cmd_load() {
  need_docker; tools
  for p in "${PROGRAMS[@]}"; do "$KIND_BIN" load docker-image "$(image_name "$p")" --name "$CLUSTER"; done
  docker image inspect redis:7-alpine >/dev/null 2>&1 || docker pull redis:7-alpine
  "$KIND_BIN" load docker-image redis:7-alpine --name "$CLUSTER"
}

kubectl_k() { "$KUBECTL_BIN" --context "kind-$CLUSTER" "$@"; }

cmd_deploy() {
  need_docker; tools
  "$HELM_BIN" upgrade --install portcullis charts/portcullis --kube-context "kind-$CLUSTER" \
    --namespace "$NAMESPACE" --create-namespace --wait --timeout 5m \
    --set images.tag="$TAG" --set images.pullPolicy=IfNotPresent \
    --set auth.issuerUrl="http://127.0.0.1:19000" "$@"
  kubectl_k -n "$NAMESPACE" rollout status deploy/portcullis-operator --timeout 180s
}

cmd_e2e() {
  need_docker; tools
  # The e2e client and the password hasher are TypeScript: Node >= 22.19 (provisioned if older).
  PATH="$(scripts/ensure-node.sh):$PATH"
  local pids=()
  cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ "${KEEP_CLUSTER:-0}" != 1 ]; then "$KIND_BIN" delete cluster --name "$CLUSTER" || true; fi
  }
  trap cleanup EXIT
  cmd_up; cmd_images; cmd_load; cmd_deploy
  kubectl_k create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml | kubectl_k apply -f -

  # The users the auth server signs in (scrypt hashes, made by the auth server's own command).
  local hash
  hash="$(printf '%s' e2e-password | node services/auth-server/hash-password.ts)"
  kubectl_k -n "$E2E_NAMESPACE" create secret generic portcullis-auth-users \
    --from-literal=users.json="{\"users\":[{\"username\":\"e2e-user\",\"password_hash\":\"$hash\"}]}" \
    --dry-run=client -o yaml | kubectl_k apply -f -

  kubectl_k -n "$E2E_NAMESPACE" apply -f - <<YAML
apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all }
spec:
  target:
    image: $(image_name services/user-service)
    command: ["node", "services/user-service/main.ts"]
    port: 8081
    env: [ { name: PORT, value: "8081" } ]
    readinessPath: /healthcheck/ready
    replicas: 1
  path: /**
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 }
---
apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: demo-app }
spec:
  displayName: Demo App
  redirectUris: [ "http://127.0.0.1:13000/callback" ]
  scopes: [ profile ]
YAML
  kubectl_k -n "$E2E_NAMESPACE" wait --for=condition=Ready ratelimitroute/all --timeout 300s
  kubectl_k -n "$E2E_NAMESPACE" wait --for=condition=Ready oauthclient/demo-app --timeout 300s

  kubectl_k -n "$E2E_NAMESPACE" port-forward svc/all 18080:80 >/dev/null 2>&1 & pids+=($!)
  kubectl_k -n "$E2E_NAMESPACE" port-forward svc/portcullis-auth-server 19000:80 >/dev/null 2>&1 & pids+=($!)
  sleep 3

  local client_id client_secret
  client_id="$(kubectl_k -n "$E2E_NAMESPACE" get secret demo-app-oauth-client -o jsonpath='{.data.client_id}' | base64 -d)"
  client_secret="$(kubectl_k -n "$E2E_NAMESPACE" get secret demo-app-oauth-client -o jsonpath='{.data.client_secret}' | base64 -d)"
  GATEWAY_URL=http://127.0.0.1:18080 ISSUER_URL=http://127.0.0.1:19000 \
    CLIENT_ID="$client_id" CLIENT_SECRET="$client_secret" REDIRECT_URI=http://127.0.0.1:13000/callback \
    USERNAME=e2e-user PASSWORD=e2e-password \
    node test/e2e-kind/run.ts
  log "e2e passed"
}

case "${1:-}" in
  images) cmd_images ;;
  up) cmd_up ;;
  load) cmd_load ;;
  deploy) shift; cmd_deploy "$@" ;;
  e2e) cmd_e2e ;;
  *) echo "usage: kind.sh images|up|load|deploy|e2e" >&2; exit 64 ;;
esac

# Portcullis — the front door. `make help` lists the targets.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

# Node >= 22.19 (Node 24 LTS provisioned into .tools/ when the machine's node is older).
NODE_BIN := $(shell scripts/ensure-node.sh)
ifeq ($(NODE_BIN),)
$(error could not find or provision Node.js; see scripts/ensure-node.sh)
endif
export PATH := $(NODE_BIN):$(CURDIR)/node_modules/.bin:$(PATH)
NODE := $(NODE_BIN)/node
VITEST := $(NODE) node_modules/vitest/vitest.mjs run
# Formatted by prettier: code only (YAML, Markdown and the generated CRDs keep their own layout).
FORMATTED := '**/*.ts' '**/*.mjs' '**/*.js'
# `make images`: the tag, the Node 24 base image, and any other `docker build` flags.
TAG ?= dev
BASE_IMAGE ?= node:24-bookworm-slim
DOCKER_BUILD_FLAGS ?=
# `make deploy`: the release, its namespace, the commands, and any other `helm upgrade` flags
# (e.g. HELM_FLAGS='--set images.tag=0.1.0 --values my-values.yaml').
RELEASE ?= portcullis
NAMESPACE ?= portcullis-system
KUBECTL ?= kubectl
HELM ?= helm
HELM_FLAGS ?=

##@ Everyday
help: ## List the targets
	@awk 'BEGIN {FS = ":.*##"} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-zA-Z0-9_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

run: deps ## Run the local stack (sidecar :8080, user-service :8081, auth-server :9000, demo-client :3000)
	@$(NODE) scripts/run-local.ts

test: deps check-generated lint typecheck test-unit test-integration test-browser test-k8s test-e2e ## Every test tier that can run here
	@echo "make test: every tier passed (unit, integration, browser, k8s, e2e)"

##@ Test tiers
test-unit: deps ## Pure logic: bucket math, schemas, resource rendering
	@echo "== tier: unit"; $(VITEST) --project unit

test-integration: deps system-deps ## Programs over real sockets with a real redis-server
	@echo "== tier: integration"; $(VITEST) --project integration

test-browser: deps system-deps oauth2-proxy ## Sign-in and consent pages in Debian's Chromium, and oauth2-proxy in front of an app
	@echo "== tier: browser"; $(VITEST) --project browser

test-k8s: deps k8s-tools ## Operator, CRDs and chart against a real kube-apiserver + etcd
	@echo "== tier: k8s"; $(VITEST) --project k8s

test-e2e: deps system-deps ## As users run it: images from the Dockerfiles, a kind cluster, helm install, the e2e (KEEP_CLUSTER=1 keeps it)
	@echo "== tier: e2e"; $(VITEST) --project e2e

soak: deps system-deps bundles ## The 10-minute soak with faults, outside the tiers (SOAK_SECONDS=600; report in test-results/soak-report.json)
	@SOAK_SECONDS=$${SOAK_SECONDS:-600} $(NODE) scripts/soak.ts

audit: deps ## npm audit of the runtime dependencies: fails on a high or critical advisory (needs the registry)
	@npm audit --omit=dev --audit-level=high

##@ Code
lint: deps ## ESLint, and prettier's check of the formatting (make format fixes it)
	@$(NODE) node_modules/eslint/bin/eslint.js --max-warnings 0 .
	@$(NODE) node_modules/prettier/bin/prettier.cjs --check --log-level warn $(FORMATTED)

format: deps ## Format the TypeScript and JavaScript with prettier
	@$(NODE) node_modules/prettier/bin/prettier.cjs --write --log-level warn $(FORMATTED)

typecheck: deps ## tsc --noEmit (strict)
	@$(NODE) node_modules/typescript/bin/tsc --noEmit -p tsconfig.json

build: typecheck bundles ## Typecheck, and bundle the programs that ship as bundles
	@echo "build: typecheck passed; every program bundled into dist/<program>/main.mjs, as its image runs it (node $$($(NODE) --version))"

bundles: deps ## Bundle every program as its image runs it: dist/<program>/main.mjs (esbuild)
	@$(NODE) scripts/build-programs.ts

crds: deps ## Generate crds/*.yaml and the chart's CRDs from operator/api
	@$(NODE) scripts/gen-crds.ts

check-generated: deps ## Fail when crds/ or the chart's CRDs are out of date
	@$(NODE) scripts/gen-crds.ts --check

bench: deps system-deps k8s-tools ## Benchmarks side by side with their anchors; bundles every program first (bench/results/, bench/README.md)
	@$(NODE) bench/run.ts

bench-operator: deps k8s-tools ## Operator: 200 RateLimitRoutes at once on a real API server (bench/results/operator.*)
	@$(NODE) bench/operator.ts

##@ Kubernetes
k8s-tools: ## Build (once, cached outside the repo) the Kubernetes commands, etcd and helm
	@test/harness/k8s/build-tools.sh

oauth2-proxy: ## Build (once, cached outside the repo) oauth2-proxy, the browser tier's OIDC relying party
	@test/harness/peers/build-oauth2-proxy.sh

images: ## Build the five images as portcullis/<program>:$(TAG) with the engine at hand (BASE_IMAGE=... to change the base)
	@for p in operator sidecar services/auth-server services/user-service services/demo-client; do \
	  echo "docker build --build-arg PROGRAM=$${p##*/} --build-arg SOURCE=$$p -t portcullis/$${p##*/}:$(TAG) ."; \
	  docker build --build-arg PROGRAM=$${p##*/} --build-arg SOURCE=$$p -t portcullis/$${p##*/}:$(TAG) --build-arg BASE_IMAGE=$(BASE_IMAGE) $(DOCKER_BUILD_FLAGS) . || exit 1; \
	done

deploy: ## Install or upgrade on the current kubectl context: CRDs server-side from crds/, then helm upgrade --install (RELEASE, NAMESPACE, HELM_FLAGS)
	$(KUBECTL) apply --server-side --force-conflicts -f crds/
	$(KUBECTL) wait --for=condition=Established --timeout=60s -f crds/
	$(HELM) upgrade --install $(RELEASE) charts/portcullis --namespace $(NAMESPACE) --create-namespace --skip-crds $(HELM_FLAGS)

e2e-kind: test-e2e ## The e2e tier (same as test-e2e): a kind cluster with everything installed; KEEP_CLUSTER=1 leaves it running

##@ Set-up
deps: node_modules/.installed

node_modules/.installed: package.json package-lock.json
	@echo "npm ci (node $$($(NODE) --version))"; npm ci --no-audit --no-fund --loglevel=error
	@touch $@

system-deps: ## Debian packages the tiers need (redis-server, nginx, chromium; docker.io, debootstrap, jq for the e2e tier)
	@scripts/ensure-system-deps.sh redis-server:redis-server nginx:nginx chromium:chromium dockerd:docker.io debootstrap:debootstrap jq:jq

.PHONY: help run test test-unit test-integration test-browser test-k8s soak audit lint format typecheck build bundles crds check-generated bench bench-operator k8s-tools oauth2-proxy images deploy e2e-kind test-e2e deps system-deps

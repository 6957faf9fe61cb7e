# One image shape for every program: its sources and runtime dependencies bundled into one file
# (scripts/build-programs.ts), on a Node 24 base, without node_modules. Build from the repository
# root with the program's name and folder:
#   docker build --build-arg PROGRAM=sidecar -t portcullis/sidecar:dev .
#   docker build --build-arg PROGRAM=auth-server --build-arg SOURCE=services/auth-server -t portcullis/auth-server:dev .
# `make images` builds all five.
#
# Contract with the chart and the operator: WORKDIR /app, the process runs as uid 1000 (non-root),
# and a container spec runs `node dist/<PROGRAM>/main.mjs`, which is also the default command.
# One bundled module instead of hundreds, and no TypeScript type stripping at start: tens of MiB
# less resident memory than running the sources (ADR 0008).
#
# Ports each program listens on: sidecar 8080 (proxy) and 9090 (admin); operator 8081 (health and
# metrics); auth-server 9000 and 9090 (metrics); user-service 8081; demo-client 3000.

# BASE_IMAGE: the Node 24 base; the public one by default (what users get). The e2e tier passes a
# local stand-in of the same name where no registry can be reached.
ARG BASE_IMAGE=node:24-bookworm-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /app
# Dependencies first and before any program argument, so that all five builds share this layer.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
COPY scripts/build-programs.ts scripts/bundle.ts ./scripts/
# Code shared between programs (token bucket, config contracts, web helpers).
COPY lib ./lib
ARG PROGRAM
ARG SOURCE=${PROGRAM}
COPY ${SOURCE} ./${SOURCE}
RUN node scripts/build-programs.ts "${PROGRAM}"

FROM ${BASE_IMAGE}
ARG PROGRAM
ENV NODE_ENV=production PROGRAM=${PROGRAM}
WORKDIR /app
COPY --from=build /app/dist/${PROGRAM} ./dist/${PROGRAM}
USER 1000:1000
# exec: node replaces the shell and receives the termination signal itself.
CMD ["/bin/sh", "-c", "exec node dist/${PROGRAM}/main.mjs"]

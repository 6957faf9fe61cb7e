// Composition of the decision service (mode: decision) from injected dependencies; never listens
// (decision-main.ts does). The same config, store, key sources and metrics as the proxy
// (app.ts), the same swap of the RouteRuntime on reload, and no upstream: the front doors answer
// gateways (decision-http.ts, decision-grpc.ts) instead of forwarding.
import http from 'node:http';
import type http2 from 'node:http2';
import type { Logger } from 'pino';
import { Pool, type Dispatcher } from 'undici';
import { parseSidecarConfigText, type SidecarConfig } from '../lib/config/sidecar.ts';
import type { BucketStore } from '../lib/token-bucket/bucket-store.ts';
import { buildAdminServer } from './admin.ts';
import { Admission } from './admission.ts';
import { jwtKeySource, readyWithin } from './app.ts';
import { createBucketStore } from './create-store.ts';
import { buildDecisionGrpcServer } from './decision-grpc.ts';
import { decisionHttpHandler } from './decision-http.ts';
import { trustedPeers } from './forwarded-request.ts';
import { SidecarMetrics } from './metrics.ts';
import { resolveRedisConfig } from './redis-url-file.ts';
import { buildRouteRuntime, type RouteRuntime } from './route-runtime.ts';

export interface DecisionDeps {
  readonly config: SidecarConfig;
  readonly logger: Logger;
  /** Wall clock in ms for the memory store (the Redis store uses Redis TIME). */
  readonly now: () => number;
  /** Applied to every config (initial and reloaded), e.g. ports from the environment. */
  readonly override?: (config: SidecarConfig) => SidecarConfig;
  readonly metrics?: SidecarMetrics;
}

export interface DecisionApp {
  readonly httpServer: http.Server;
  /** The gRPC ext_authz server, when decision.grpc is set. */
  readonly grpcServer: http2.Http2Server | undefined;
  readonly adminServer: http.Server;
  readonly metrics: SidecarMetrics;
  current(): RouteRuntime;
  storeReady(timeoutMs: number): Promise<boolean>;
  /** Validates and applies new config text; an invalid one is logged and the old config kept. */
  reloadText(text: string): Promise<boolean>;
  /** Re-reads `redis.urlFile` and reconnects the store when the URL changed. */
  refreshFiles(): Promise<boolean>;
  shutdown(): Promise<void>;
}

/** The RouteRuntime's upstream in decision mode: the service never forwards, so a dispatch is a bug. */
class NoUpstream extends Pool {
  constructor() {
    super('http://127.0.0.1:9');
  }
  override dispatch(_options: Dispatcher.DispatchOptions, _handler: Dispatcher.DispatchHandler): boolean {
    throw new Error('the decision service has no upstream');
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export function buildDecisionApp(deps: DecisionDeps): DecisionApp {
  const log = deps.logger;
  const metrics = deps.metrics ?? new SidecarMetrics();
  const override = deps.override ?? ((c: SidecarConfig) => c);
  const initial = override(deps.config);
  const noUpstream = new NoUpstream();
  let storeRedis = resolveRedisConfig(initial.redis);
  const storeHooks = {
    onRefusedLocally: () => metrics.localRefusals.inc(),
    onEvicted: (count: number) => metrics.storeEvictions.inc(count),
    onRefusedFull: () => metrics.storeFullRefusals.inc(),
  };
  // memory.* is read once: a new memory store would forget every bucket (and admit their users afresh).
  const first = createBucketStore(storeRedis, initial.memory, deps.now, storeHooks);
  let storeKind = first.kind;
  let runtime = buildRouteRuntime(initial, first.store, noUpstream, metrics.forRoute(initial.route.id, first.kind), jwtKeySource(initial, undefined));
  let shuttingDown = false;

  const admission = new Admission(log);
  // decision.* is read once, like listen: the listeners and who is trusted hold for the process' life.
  const handler = decisionHttpHandler({ logger: log, admission, runtime: () => runtime, trusted: trustedPeers(initial.decision.trustedProxies), pathPrefix: initial.decision.pathPrefix });
  // A check is answered from its head (its body, if any, is drained, never awaited): only the
  // head needs a deadline, as on the proxy's listener.
  const httpServer = http.createServer({ keepAliveTimeout: 65_000, headersTimeout: initial.listen.headersTimeoutMs, requestTimeout: 0, connectionsCheckingInterval: 1000 }, handler);
  const grpcServer = initial.decision.grpc === undefined ? undefined : buildDecisionGrpcServer({ logger: log, admission, runtime: () => runtime });
  const grpcSessions = new Set<http2.ServerHttp2Session>();
  grpcServer?.on('session', (session: http2.ServerHttp2Session) => {
    grpcSessions.add(session);
    session.once('close', () => grpcSessions.delete(session));
  });

  const adminServer = buildAdminServer({
    registry: metrics.registry,
    notReadyReason: () => {
      if (shuttingDown) return 'shutting down';
      if (!httpServer.listening) return 'decision listener not listening';
      if (!runtime.store.isReady() && runtime.onStoreError === 'deny') return 'limiter store unavailable and onStoreError is deny';
      return null;
    },
  });

  const applyNow = async (config: SidecarConfig | undefined): Promise<void> => {
    const next = override(config ?? runtime.config);
    let store: BucketStore = runtime.store;
    let kind = storeKind;
    const nextRedis = resolveRedisConfig(next.redis);
    if (!same(nextRedis, storeRedis)) {
      const created = createBucketStore(nextRedis, initial.memory, deps.now, storeHooks);
      const connected = await readyWithin(created.store, nextRedis?.connectTimeoutMs ?? 0);
      store = created.store;
      kind = created.kind;
      log.info({ store: kind, connected }, 'store settings changed: new checks use a new store connection');
    }
    const old = runtime;
    for (const field of ['listen', 'admin', 'decision', 'mode'] as const) {
      if (!same(next[field], old.config[field])) log.warn({ field }, 'config: a changed listen/admin/decision/mode setting needs a restart; keeping the old one');
    }
    runtime = buildRouteRuntime(next, store, noUpstream, metrics.forRoute(next.route.id, kind), jwtKeySource(next, old.jwt));
    storeKind = kind;
    storeRedis = nextRedis;
    log.level = next.logLevel;
    if (store !== old.store) void old.store.close().catch(() => undefined);
  };
  let applying: Promise<unknown> = Promise.resolve();
  const apply = (config: SidecarConfig | undefined): Promise<void> => {
    const done = applying.then(() => applyNow(config));
    applying = done.catch(() => undefined);
    return done;
  };

  return {
    httpServer,
    grpcServer,
    adminServer,
    metrics,
    current: () => runtime,
    storeReady: (timeoutMs) => readyWithin(runtime.store, timeoutMs),
    async reloadText(text) {
      let config: SidecarConfig;
      try {
        config = parseSidecarConfigText(text);
        await apply(config);
      } catch (err) {
        metrics.reloads.labels('invalid').inc();
        log.error({ err: (err as Error).message }, 'config reload rejected; keeping the running config');
        return false;
      }
      metrics.reloads.labels('applied').inc();
      log.info({ route: runtime.routeId, path: runtime.config.route.path, key: runtime.config.limiter.key }, 'config reloaded');
      return true;
    },
    async refreshFiles() {
      try {
        await apply(undefined);
      } catch (err) {
        metrics.reloads.labels('failed').inc();
        log.error({ err: (err as Error).message }, 'redis.urlFile unreadable or invalid; keeping the running store');
        return false;
      }
      return true;
    },
    async shutdown() {
      if (shuttingDown) return;
      shuttingDown = true;
      // A check is one short exchange: stop accepting, let the ones under way answer, then close.
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeIdleConnections();
      // http2: close() stops accepting and resolves once the open sessions end (GOAWAY sent by Node).
      const grpcClosed = grpcServer === undefined || !grpcServer.listening ? Promise.resolve() : new Promise<void>((resolve) => grpcServer.close(() => resolve()));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([closed, grpcClosed]), new Promise((resolve) => (timer = setTimeout(resolve, runtime.config.shutdownGraceMs)))]);
      clearTimeout(timer);
      httpServer.closeAllConnections();
      for (const session of grpcSessions) session.destroy();
      const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeAllConnections();
      await Promise.allSettled([runtime.store.close(), noUpstream.close(), adminClosed]);
    },
  };
}

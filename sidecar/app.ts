// Composition of the sidecar from injected dependencies; never listens (main.ts does). Owns the
// current RouteRuntime and swaps it atomically on reload: new requests see the new config,
// in-flight ones finish with the one they started with.
import http from 'node:http';
import type { Logger } from 'pino';
import { Pool } from 'undici';
import { buildAdminServer } from './admin.ts';
import { deprecatedOptions, parseSidecarConfigText, proxyUpstream, type SidecarConfig } from '../lib/config/sidecar.ts';
import { SidecarMetrics } from './metrics.ts';
import { problemTypes, writeSocketProblem } from './problem.ts';
import { GatewayProxy } from './proxy.ts';
import { resolveRedisConfig } from './redis-url-file.ts';
import { requestBodyTimeout } from './request-body-timeout.ts';
import { JwtKeySource } from './jwt-key.ts';
import { buildRouteRuntime, lengthenedTtls, type RouteRuntime } from './route-runtime.ts';
import { UpgradeProxy } from './upgrade.ts';
import { createBucketStore } from './create-store.ts';
import type { BucketStore } from '../lib/token-bucket/bucket-store.ts';

export interface SidecarDeps {
  readonly config: SidecarConfig;
  readonly logger: Logger;
  /** Wall clock in ms for the memory store (the Redis store uses Redis TIME). */
  readonly now: () => number;
  /** Applied to every config (initial and reloaded), e.g. ports from the environment. */
  readonly override?: (config: SidecarConfig) => SidecarConfig;
  readonly metrics?: SidecarMetrics;
}

export interface SidecarApp {
  readonly proxyServer: http.Server;
  readonly adminServer: http.Server;
  readonly metrics: SidecarMetrics;
  readonly proxy: GatewayProxy;
  readonly upgrades: UpgradeProxy;
  current(): RouteRuntime;
  /** Resolves when the store answers (or after timeoutMs); false when it did not. */
  storeReady(timeoutMs: number): Promise<boolean>;
  /** Validates and applies new config text; an invalid one is logged and the old config kept. */
  reloadText(text: string): Promise<boolean>;
  /**
   * Re-reads the files the running config names (`redis.urlFile`) and reconnects the store when
   * the URL changed; an unreadable or invalid file is logged and the running store kept.
   */
  refreshFiles(): Promise<boolean>;
  /** Graceful: stop accepting, drain in-flight up to graceMs, close everything. */
  shutdown(): Promise<void>;
}

function createPool(config: SidecarConfig): Pool {
  const u = proxyUpstream(config);
  return new Pool(u.url, {
    connections: u.connections,
    connect: { timeout: u.connectTimeoutMs },
    headersTimeout: u.timeoutMs,
    bodyTimeout: u.bodyTimeoutMs,
    keepAliveTimeout: 4000,
  });
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** The jwt key source of `config`: the running one (and its caches) when its settings did not change. */
export function jwtKeySource(config: SidecarConfig, running: JwtKeySource | undefined): JwtKeySource | undefined {
  const settings = config.limiter.jwt;
  if (config.limiter.key !== 'jwt' || settings === undefined) return undefined;
  return running !== undefined && same(running.config, settings) ? running : new JwtKeySource(settings);
}

/** Resolves true once the store answers, false after timeoutMs. */
export async function readyWithin(store: BucketStore, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const ok = await Promise.race([store.ready().then(() => true), timeout]);
  clearTimeout(timer);
  return ok;
}

export function buildSidecarApp(deps: SidecarDeps): SidecarApp {
  const log = deps.logger;
  const metrics = deps.metrics ?? new SidecarMetrics();
  const override = deps.override ?? ((c: SidecarConfig) => c);
  const initial = override(deps.config);
  for (const message of deprecatedOptions(initial)) log.warn(message);
  // The redis settings the current store was built from, urlFile resolved to the URL it held.
  let storeRedis = resolveRedisConfig(initial.redis);
  const storeHooks = {
    onRefusedLocally: () => metrics.localRefusals.inc(),
    onEvicted: (count: number) => metrics.storeEvictions.inc(count),
    onRefusedFull: () => metrics.storeFullRefusals.inc(),
  };
  // memory.* is read once: a new memory store would forget every bucket (and admit their users afresh).
  const first = createBucketStore(storeRedis, initial.memory, deps.now, storeHooks);
  let storeKind = first.kind;
  let runtime = buildRouteRuntime(initial, first.store, createPool(initial), metrics.forRoute(initial.route.id, first.kind), jwtKeySource(initial, undefined));
  let shuttingDown = false;

  const proxy = new GatewayProxy({ logger: log, runtime: () => runtime });
  // requestTimeout: 0 below keeps long uploads alive; a stalled body is cut by this idle timeout.
  // listen.* needs a restart, so the initial value holds for the life of the server.
  const watchBody = requestBodyTimeout({
    idleMs: () => initial.listen.requestTimeoutMs,
    minBytesPerSecond: () => initial.listen.requestBodyMinBytesPerSecond,
    onTimeout: (answered) => {
      runtime.metrics.outcome.bad_request.inc();
      log.debug({ answered408: answered }, 'request body stalled; connection closed');
    },
  });
  // headersTimeout bounds slow clients (slowloris); Node checks it every connectionsCheckingInterval,
  // whose default (30 s) would let a header trickle live 30 s past the timeout.
  // One 'request' listener: with two, every request's emit would copy the listener array.
  const proxyServer = http.createServer(
    { keepAliveTimeout: 65_000, requestTimeout: 0, headersTimeout: initial.listen.headersTimeoutMs, connectionsCheckingInterval: 1000 },
    (req, res) => {
      watchBody(req, res);
      proxy.handle(req, res);
    },
  );
  // HTTP Upgrade (WebSocket): admitted like a request, then tunnelled (sidecar/upgrade.ts).
  const upgrades = new UpgradeProxy({ logger: log, runtime: () => runtime, registry: metrics.registry });
  proxyServer.on('upgrade', upgrades.handle);
  proxyServer.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // writeSocketProblem answers a socket once (the parser repeats its error for each further
    // chunk of a refused request) and destroys one that can no longer be written.
    // Keep Node's own statuses for the two errors that have one (408 and 431); 400 otherwise
    // (e.g. a control character other than tab in USER-ID, which Node's parser refuses itself).
    // Still a problem+json body, like every other error of the gateway.
    const [status, title, detail] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'The request headers did not arrive in time.']
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request Header Fields Too Large', 'The request headers are too large.']
          : [400, 'Bad Request', 'The request is not valid HTTP/1.1 (for example a control character in a header value).'];
    writeSocketProblem(socket, { type: problemTypes.badRequest, title, status, detail });
  });

  const adminServer = buildAdminServer({
    registry: metrics.registry,
    notReadyReason: () => {
      if (shuttingDown) return 'shutting down';
      if (!proxyServer.listening) return 'proxy not listening';
      if (!runtime.store.isReady() && runtime.onStoreError === 'deny') return 'limiter store unavailable and onStoreError is deny';
      return null;
    },
  });

  const retire = (store: BucketStore | undefined, pool: Pool | undefined) => {
    // Requests that started on the old runtime still hold it; close gracefully behind them.
    void Promise.allSettled([store?.close(), pool?.close()]);
  };

  /** Applies `config`, or re-applies the running one (re-reading the files it names). */
  const applyNow = async (config: SidecarConfig | undefined): Promise<void> => {
    const next = override(config ?? runtime.config);
    if (config !== undefined) for (const message of deprecatedOptions(next)) log.warn(message);
    let store = runtime.store;
    let kind = storeKind;
    const nextRedis = resolveRedisConfig(next.redis);
    if (!same(nextRedis, storeRedis)) {
      const created = createBucketStore(nextRedis, initial.memory, deps.now, storeHooks);
      // Switch once the new store answers (at most its connect timeout), so that new requests
      // are not refused by onStoreError while it connects; the old store serves until then.
      const connected = await readyWithin(created.store, nextRedis?.connectTimeoutMs ?? 0);
      store = created.store;
      kind = created.kind;
      log.info({ store: kind, connected }, 'store settings changed: new requests use a new store connection');
    }
    const old = runtime;
    for (const field of ['listen', 'admin', 'memory'] as const) {
      if (!same(next[field], old.config[field])) log.warn({ field }, 'config: a changed listen, admin or memory setting needs a restart; keeping the old one');
    }
    const pool = same(next.upstream, old.config.upstream) ? old.upstream : createPool(next);
    runtime = buildRouteRuntime(next, store, pool, metrics.forRoute(next.route.id, kind), jwtKeySource(next, old.jwt));
    storeKind = kind;
    storeRedis = nextRedis;
    log.level = next.logLevel;
    retire(store === old.store ? undefined : old.store, pool === old.upstream ? undefined : old.upstream);
    if (store === old.store) retainBuckets(old, runtime);
  };

  /**
   * Limits that refill more slowly now keep the buckets' state: keys written under the old limits
   * get the new limits' TTL, so none expires (and reads as full) before it would have refilled.
   */
  const retainBuckets = (old: RouteRuntime, next: RouteRuntime): void => {
    const store = next.store;
    if (store.retain === undefined) return;
    for (const { bucketPrefix, ttlsMs } of lengthenedTtls(old, next)) {
      store.retain(bucketPrefix, ttlsMs).then(
        (keys) => log.info({ route: next.routeId, bucketPrefix, keys, ttlsMs }, 'limits changed: stored buckets keep their state for the new limits'),
        (err: unknown) => log.warn({ route: next.routeId, bucketPrefix, err: (err as Error).message }, 'limits changed: could not lengthen the stored buckets\' TTL'),
      );
    }
  };
  // One apply at a time (applyNow may wait for a store to connect): each sees the last one's result.
  let applying: Promise<unknown> = Promise.resolve();
  const apply = (config: SidecarConfig | undefined): Promise<void> => {
    const done = applying.then(() => applyNow(config));
    applying = done.catch(() => undefined);
    return done;
  };

  return {
    proxyServer,
    adminServer,
    metrics,
    proxy,
    upgrades,
    current: () => runtime,
    storeReady: (timeoutMs) => readyWithin(runtime.store, timeoutMs),
    async reloadText(text) {
      let config: SidecarConfig;
      try {
        config = parseSidecarConfigText(text);
      } catch (err) {
        metrics.reloads.labels('invalid').inc();
        log.error({ err: (err as Error).message }, 'config reload rejected; keeping the running config');
        return false;
      }
      try {
        await apply(config);
      } catch (err) {
        metrics.reloads.labels('failed').inc();
        log.error({ err: (err as Error).message }, 'config reload failed; keeping the running config');
        return false;
      }
      metrics.reloads.labels('applied').inc();
      const l = runtime.config.limiter;
      log.info(
        { route: runtime.routeId, path: runtime.config.route.path, key: l.key, rules: runtime.rules.map((r) => ({ name: r.name, limits: r.limits, enforce: r.enforce })) },
        'config reloaded',
      );
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
      const grace = runtime.config.shutdownGraceMs;
      const keepAlive = Math.min(runtime.config.shutdownKeepAliveMs, grace);
      const draining = proxy.drain(); // from now on every answer says Connection: close
      // A client may send on a kept-alive connection at any moment (kube-proxy keeps routing an
      // open connection to this pod after its endpoint is gone). Closing idle connections at once
      // races with such a request, which the client sees as a reset. So they stay open a moment:
      // a busy client's next request is answered with Connection: close and the client moves on.
      await new Promise((resolve) => setTimeout(resolve, keepAlive));
      // close() stops accepting and closes the connections that are idle now.
      const closed = new Promise<void>((resolve) => proxyServer.close(() => resolve()));
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        draining.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), grace - keepAlive);
        }),
      ]);
      clearTimeout(timer);
      if (!drained) log.warn({ inFlight: proxy.inFlight, graceMs: grace }, 'shutdown grace elapsed; closing remaining connections');
      proxyServer.closeAllConnections();
      upgrades.closeAll(); // tunnels have no natural end; the server cannot close while they live
      await closed;
      const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeAllConnections();
      await Promise.allSettled([runtime.upstream.close(), runtime.store.close(), adminClosed]);
    },
  };
}

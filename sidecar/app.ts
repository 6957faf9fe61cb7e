// Composition of the sidecar from injected dependencies; never listens (main.ts does). The
// running RouteRuntime and its reloads are live-runtime.ts'; this file adds the proxy's servers.
import http from 'node:http';
import type { Logger } from 'pino';
import { Pool } from 'undici';
import { buildAdminServer } from './admin.ts';
import { proxyUpstream, type SidecarConfig } from '../lib/config/sidecar.ts';
import { SidecarMetrics } from './metrics.ts';
import { problemTypes, writeSocketProblem } from './problem.ts';
import { GatewayProxy } from './proxy.ts';
import { requestBodyTimeout } from './request-body-timeout.ts';
import { buildLiveRuntime } from './live-runtime.ts';
import type { RouteRuntime } from './route-runtime.ts';
import { UpgradeProxy } from './upgrade.ts';

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

export function buildSidecarApp(deps: SidecarDeps): SidecarApp {
  const log = deps.logger;
  const metrics = deps.metrics ?? new SidecarMetrics();
  const override = deps.override ?? ((c: SidecarConfig) => c);
  const initial = override(deps.config);
  const live = buildLiveRuntime({
    initial,
    override,
    logger: log,
    now: deps.now,
    metrics,
    // A new pool only when the upstream settings changed: kept-alive connections carry over.
    upstream: (config, running) =>
      running !== undefined && same(config.upstream, running.config.upstream)
        ? running.upstream
        : createPool(config),
    restartFields: ['listen', 'admin', 'memory'],
  });
  let shuttingDown = false;

  const proxy = new GatewayProxy({ logger: log, runtime: live.current });
  // requestTimeout: 0 below keeps long uploads alive; a stalled body is cut by this idle timeout.
  // listen.* needs a restart, so the initial value holds for the life of the server.
  const watchBody = requestBodyTimeout({
    idleMs: () => initial.listen.requestTimeoutMs,
    minBytesPerSecond: () => initial.listen.requestBodyMinBytesPerSecond,
    onTimeout: (answered) => {
      live.current().metrics.outcome.bad_request.inc();
      log.debug({ answered408: answered }, 'request body stalled; connection closed');
    },
  });
  // headersTimeout bounds slow clients (slowloris); Node checks it every connectionsCheckingInterval,
  // whose default (30 s) would let a header trickle live 30 s past the timeout.
  // One 'request' listener: with two, every request's emit would copy the listener array.
  const proxyServer = http.createServer(
    {
      keepAliveTimeout: 65_000,
      requestTimeout: 0,
      headersTimeout: initial.listen.headersTimeoutMs,
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      watchBody(req, res);
      proxy.handle(req, res);
    },
  );
  // HTTP Upgrade (WebSocket): admitted like a request, then tunnelled (sidecar/upgrade.ts).
  const upgrades = new UpgradeProxy({
    logger: log,
    runtime: live.current,
    registry: metrics.registry,
  });
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
          : [
              400,
              'Bad Request',
              'The request is not valid HTTP/1.1 (for example a control character in a header value).',
            ];
    writeSocketProblem(socket, { type: problemTypes.badRequest, title, status, detail });
  });

  const adminServer = buildAdminServer({
    registry: metrics.registry,
    notReadyReason: () => {
      if (shuttingDown) return 'shutting down';
      if (!proxyServer.listening) return 'proxy not listening';
      if (!live.current().store.isReady() && live.current().onStoreError === 'deny')
        return 'limiter store unavailable and onStoreError is deny';
      return null;
    },
  });

  return {
    proxyServer,
    adminServer,
    metrics,
    proxy,
    upgrades,
    current: live.current,
    storeReady: live.storeReady,
    reloadText: live.reloadText,
    refreshFiles: live.refreshFiles,
    async shutdown() {
      if (shuttingDown) return;
      shuttingDown = true;
      const runtime = live.current();
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
      if (!drained)
        log.warn(
          { inFlight: proxy.inFlight, graceMs: grace },
          'shutdown grace elapsed; closing remaining connections',
        );
      proxyServer.closeAllConnections();
      upgrades.closeAll(); // tunnels have no natural end; the server cannot close while they live
      await closed;
      const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeAllConnections();
      await Promise.allSettled([runtime.upstream.close(), runtime.store.close(), adminClosed]);
    },
  };
}

// Composition of the decision service (mode: decision) from injected dependencies; never listens
// (decision-main.ts does). The same running RouteRuntime and reloads as the proxy
// (live-runtime.ts), and no upstream: the front doors answer gateways (decision-http.ts,
// decision-grpc.ts) instead of forwarding.
import http from 'node:http';
import type http2 from 'node:http2';
import type { Logger } from 'pino';
import { Pool, type Dispatcher } from 'undici';
import type { SidecarConfig } from '../lib/config/sidecar.ts';
import { buildAdminServer } from './admin.ts';
import { Admission } from './admission.ts';
import { buildDecisionGrpcServer } from './decision-grpc.ts';
import { decisionHttpHandler } from './decision-http.ts';
import { trustedPeers } from './forwarded-request.ts';
import { buildLiveRuntime } from './live-runtime.ts';
import { SidecarMetrics } from './metrics.ts';
import type { RouteRuntime } from './route-runtime.ts';

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
  override dispatch(
    _options: Dispatcher.DispatchOptions,
    _handler: Dispatcher.DispatchHandler,
  ): boolean {
    throw new Error('the decision service has no upstream');
  }
}

export function buildDecisionApp(deps: DecisionDeps): DecisionApp {
  const log = deps.logger;
  const metrics = deps.metrics ?? new SidecarMetrics();
  const override = deps.override ?? ((c: SidecarConfig) => c);
  const initial = override(deps.config);
  const noUpstream = new NoUpstream();
  const live = buildLiveRuntime({
    initial,
    override,
    logger: log,
    now: deps.now,
    metrics,
    upstream: () => noUpstream,
    restartFields: ['mode', 'listen', 'admin', 'memory', 'decision'],
  });
  let shuttingDown = false;

  const admission = new Admission(log);
  // decision.* is read once, like listen: the listeners and who is trusted hold for the process' life.
  const handler = decisionHttpHandler({
    logger: log,
    admission,
    runtime: live.current,
    trusted: trustedPeers(initial.decision.trustedProxies),
    pathPrefix: initial.decision.pathPrefix,
  });
  // A check is answered from its head (its body, if any, is drained, never awaited): only the
  // head needs a deadline, as on the proxy's listener.
  const httpServer = http.createServer(
    {
      keepAliveTimeout: 65_000,
      headersTimeout: initial.listen.headersTimeoutMs,
      requestTimeout: 0,
      connectionsCheckingInterval: 1000,
    },
    handler,
  );
  const grpcServer =
    initial.decision.grpc === undefined
      ? undefined
      : buildDecisionGrpcServer({ logger: log, admission, runtime: live.current });
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
      if (!live.current().store.isReady() && live.current().onStoreError === 'deny')
        return 'limiter store unavailable and onStoreError is deny';
      return null;
    },
  });

  return {
    httpServer,
    grpcServer,
    adminServer,
    metrics,
    current: live.current,
    storeReady: live.storeReady,
    reloadText: live.reloadText,
    refreshFiles: live.refreshFiles,
    async shutdown() {
      if (shuttingDown) return;
      shuttingDown = true;
      // A check is one short exchange: stop accepting, let the ones under way answer, then close.
      const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
      httpServer.closeIdleConnections();
      // http2: close() stops accepting and resolves once the open sessions end (GOAWAY sent by Node).
      const grpcClosed =
        grpcServer === undefined || !grpcServer.listening
          ? Promise.resolve()
          : new Promise<void>((resolve) => grpcServer.close(() => resolve()));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([closed, grpcClosed]),
        new Promise(
          (resolve) => (timer = setTimeout(resolve, live.current().config.shutdownGraceMs)),
        ),
      ]);
      clearTimeout(timer);
      httpServer.closeAllConnections();
      for (const session of grpcSessions) session.destroy();
      const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeAllConnections();
      await Promise.allSettled([live.current().store.close(), noUpstream.close(), adminClosed]);
    },
  };
}

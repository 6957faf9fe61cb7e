// The decision service's process: watches the config and redis.urlFile like the proxy, listens
// (HTTP front door on listen, gRPC on decision.grpc, admin), and drains on SIGTERM. Called by
// main.ts, which reads the environment and the config file, when the config says mode: decision.
import type { Server } from 'node:net';
import type { Logger } from 'pino';
import type { SidecarConfig } from '../lib/config/sidecar.ts';
import { ConfigWatcher } from './config-watcher.ts';
import { buildDecisionApp } from './decision-app.ts';
import { RedisUrlWatcher } from './redis-url-watcher.ts';

export interface DecisionLaunch {
  readonly file: string;
  /** The config file's text as read at start (the watcher's baseline). */
  readonly text: string;
  readonly config: SidecarConfig;
  readonly logger: Logger;
  readonly now: () => number;
  readonly override: (config: SidecarConfig) => SidecarConfig;
}

const listen = (server: Server, port: number, host: string) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

export async function runDecisionService(launch: DecisionLaunch): Promise<void> {
  const { logger } = launch;
  const app = buildDecisionApp({ config: launch.config, logger, now: launch.now, override: launch.override });
  const effective = app.current().config;

  const urlWatcher = new RedisUrlWatcher({
    onChange: () => void app.refreshFiles(),
    onError: (err) => logger.error({ err: err.message }, 'redis.urlFile unreadable; keeping the running store'),
  });
  urlWatcher.follow(effective.redis?.urlFile);
  const watcher = new ConfigWatcher({
    file: launch.file,
    initialText: launch.text,
    onText: (t) => void app.reloadText(t).then(() => urlWatcher.follow(app.current().config.redis?.urlFile)),
    onError: (err) => logger.error({ err: err.message }, 'config file unreadable; keeping the running config'),
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: answering the checks under way');
    watcher.close();
    urlWatcher.close();
    app.shutdown().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));

  if (effective.redis !== undefined && !(await app.storeReady(5000))) {
    logger.warn({ policy: effective.limiter.onStoreError }, 'redis not reachable yet; starting anyway (onStoreError applies until it is)');
  }
  const grpcListen = effective.decision.grpc;
  try {
    await listen(app.adminServer, effective.admin.port, effective.admin.host);
    if (app.grpcServer !== undefined && grpcListen !== undefined) await listen(app.grpcServer, grpcListen.port, grpcListen.host);
    await listen(app.httpServer, effective.listen.port, effective.listen.host);
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'could not listen');
    process.exit(1);
  }
  const l = effective.limiter;
  logger.info(
    {
      mode: 'decision',
      port: effective.listen.port,
      grpcPort: grpcListen?.port,
      adminPort: effective.admin.port,
      route: effective.route.id,
      path: effective.route.path,
      store: effective.redis === undefined ? 'memory' : 'redis',
      trustedProxies: effective.decision.trustedProxies,
      replenishRate: l.replenishRate,
      burstCapacity: l.burstCapacity,
      requestedTokens: l.requestedTokens,
    },
    'decision service listening',
  );
}

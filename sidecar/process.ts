// One sidecar process around an app, proxy or decision service alike: follows the config file and
// redis.urlFile (a rewritten one reloads), drains on SIGTERM and SIGINT, waits a moment for the
// store, listens, and logs where. Called by main.ts and decision-main.ts, which build the app.
import type { Server } from 'node:net';
import type { Logger } from 'pino';
import { ConfigWatcher } from './config-watcher.ts';
import type { LiveRuntime } from './live-runtime.ts';
import { RedisUrlWatcher } from './redis-url-watcher.ts';

export interface SidecarProcess {
  /** The config file and its text as read at start (the watcher's baseline). */
  readonly file: string;
  readonly text: string;
  readonly logger: Logger;
  readonly app: LiveRuntime & { shutdown(): Promise<void> };
  /** What the log says on SIGTERM. */
  readonly stopping: string;
  /** The servers in the order they listen (the front door last, once the others are up). */
  readonly listeners: ReadonlyArray<{
    readonly server: Server;
    readonly port: number;
    readonly host: string;
  }>;
  /** The line logged once listening, and its fields. */
  readonly listening: { readonly message: string; readonly fields: Record<string, unknown> };
}

const listen = (server: Server, port: number, host: string) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });

export async function runSidecarProcess(p: SidecarProcess): Promise<void> {
  const { logger, app } = p;
  const effective = app.current().config;

  // redis.urlFile (a mounted Secret): a rewritten file reconnects the store, like a config change.
  const urlWatcher = new RedisUrlWatcher({
    onChange: () => void app.refreshFiles(),
    onError: (err) =>
      logger.error({ err: err.message }, 'redis.urlFile unreadable; keeping the running store'),
  });
  urlWatcher.follow(effective.redis?.urlFile);
  const watcher = new ConfigWatcher({
    file: p.file,
    initialText: p.text,
    onText: (t) =>
      void app.reloadText(t).then(() => urlWatcher.follow(app.current().config.redis?.urlFile)),
    onError: (err) =>
      logger.error({ err: err.message }, 'config file unreadable; keeping the running config'),
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, p.stopping);
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
    logger.warn(
      { policy: effective.limiter.onStoreError },
      'redis not reachable yet; starting anyway (onStoreError applies until it is)',
    );
  }
  try {
    for (const { server, port, host } of p.listeners) await listen(server, port, host);
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'could not listen');
    process.exit(1);
  }
  logger.info(p.listening.fields, p.listening.message);
}

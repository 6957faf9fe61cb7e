// Sidecar entry point: the only place reading process.env and argv, creating the real clock and
// listening. `node sidecar/main.ts --config /etc/portcullis/sidecar.yaml` (or SIDECAR_CONFIG).
// PORT and ADMIN_PORT, when set, override the listen and admin ports of the file. With `mode:
// decision` the program is the decision service instead (decision-main.ts).
import { readFileSync } from 'node:fs';
import type { Server } from 'node:net';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildSidecarApp } from './app.ts';
import { ConfigError, parseSidecarConfigText, type SidecarConfig } from '../lib/config/sidecar.ts';
import { ConfigWatcher } from './config-watcher.ts';
import { RedisUrlWatcher } from './redis-url-watcher.ts';

const bootLog = pino({ name: 'portcullis-sidecar' });

function fail(message: string): never {
  bootLog.fatal(message);
  process.exit(2);
}

const { values } = parseArgs({ options: { config: { type: 'string' } }, strict: true });
const file = values.config ?? process.env.SIDECAR_CONFIG;
if (file === undefined || file === '') fail('no config file: pass --config PATH or set SIDECAR_CONFIG');

const portFromEnv = (name: string): number | undefined => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`invalid ${name}: ${raw}`);
  return n;
};
const envPort = portFromEnv('PORT');
const envAdminPort = portFromEnv('ADMIN_PORT');
const override = (c: SidecarConfig): SidecarConfig => ({
  ...c,
  listen: envPort === undefined ? c.listen : { ...c.listen, port: envPort },
  admin: envAdminPort === undefined ? c.admin : { ...c.admin, port: envAdminPort },
});

let text: string;
let config: SidecarConfig;
try {
  text = readFileSync(file, 'utf8');
  config = parseSidecarConfigText(text);
} catch (err) {
  fail(err instanceof ConfigError ? err.message : `cannot read config ${file}: ${(err as Error).message}`);
}

const logger = pino({ name: 'portcullis-sidecar', level: config.logLevel });
const now = () => performance.timeOrigin + performance.now();
if (config.mode === 'decision') {
  // The decision service (no proxying) on the same config; loaded only in this mode.
  const { runDecisionService } = await import('./decision-main.ts');
  await runDecisionService({ file, text, config, logger, now, override });
} else {
  let app: ReturnType<typeof buildSidecarApp>;
  try {
    app = buildSidecarApp({ config, logger, now, override });
  } catch (err) {
    fail(err instanceof ConfigError ? err.message : `cannot start: ${(err as Error).message}`);
  }
  const effective = app.current().config;

  // redis.urlFile (a mounted Secret): a rewritten file reconnects the store, like a config change.
  const urlWatcher = new RedisUrlWatcher({
    onChange: () => void app.refreshFiles(),
    onError: (err) => logger.error({ err: err.message }, 'redis.urlFile unreadable; keeping the running store'),
  });
  urlWatcher.follow(effective.redis?.urlFile);

  const watcher = new ConfigWatcher({
    file,
    initialText: text,
    onText: (t) => void app.reloadText(t).then(() => urlWatcher.follow(app.current().config.redis?.urlFile)),
    onError: (err) => logger.error({ err: err.message }, 'config file unreadable; keeping the running config'),
  });

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: draining in-flight requests');
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

  const listen = (server: Server, port: number, host: string) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });

  try {
    await listen(app.adminServer, effective.admin.port, effective.admin.host);
    await listen(app.proxyServer, effective.listen.port, effective.listen.host);
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'could not listen');
    process.exit(1);
  }
  const l = effective.limiter;
  logger.info(
    {
      port: effective.listen.port,
      adminPort: effective.admin.port,
      upstream: effective.upstream?.url,
      route: effective.route.id,
      path: effective.route.path,
      store: effective.redis === undefined ? 'memory' : 'redis',
      replenishRate: l.replenishRate,
      burstCapacity: l.burstCapacity,
      requestedTokens: l.requestedTokens,
    },
    'sidecar listening',
  );
}

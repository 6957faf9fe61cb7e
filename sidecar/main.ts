// Sidecar entry point: the only place reading process.env and argv, creating the real clock and
// listening. `node sidecar/main.ts --config /etc/portcullis/sidecar.yaml` (or SIDECAR_CONFIG).
// PORT and ADMIN_PORT, when set, override the listen and admin ports of the file. With `mode:
// decision` the program is the decision service instead (decision-main.ts).
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { buildSidecarApp } from './app.ts';
import { ConfigError, parseSidecarConfigText, type SidecarConfig } from '../lib/config/sidecar.ts';
import { runSidecarProcess } from './process.ts';

const bootLog = pino({ name: 'portcullis-sidecar' });

function fail(message: string): never {
  bootLog.fatal(message);
  process.exit(2);
}

const { values } = parseArgs({ options: { config: { type: 'string' } }, strict: true });
const file = values.config ?? process.env.SIDECAR_CONFIG;
if (file === undefined || file === '')
  fail('no config file: pass --config PATH or set SIDECAR_CONFIG');

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
  fail(
    err instanceof ConfigError
      ? err.message
      : `cannot read config ${file}: ${(err as Error).message}`,
  );
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
  const l = effective.limiter;
  await runSidecarProcess({
    file,
    text,
    logger,
    app,
    stopping: 'shutting down: draining in-flight requests',
    listeners: [
      { server: app.adminServer, port: effective.admin.port, host: effective.admin.host },
      { server: app.proxyServer, port: effective.listen.port, host: effective.listen.host },
    ],
    listening: {
      message: 'sidecar listening',
      fields: {
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
    },
  });
}

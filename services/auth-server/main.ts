// Auth-server entry point: the only place reading process.env, creating the clock, the stores and
// the key ring, and listening (the public port and, unless AUTH_METRICS_PORT is 0, the metrics
// port). SIGTERM/SIGINT close the server gracefully.
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { buildApp } from './app.ts';
import { loadAuthServerConfig, parseJsonFile } from '../../lib/config/auth-server.ts';
import { clientIdsBesideAudience, clientRegistrySchema } from '../../lib/config/client-registry.ts';
import { signingKeysFileSchema, type SigningKeysFile } from '../../lib/config/signing-keys-file.ts';
import { usersFileSchema } from '../../lib/config/users-file.ts';
import { createClientAuthThrottle, defaultClientAuthLimits } from './client-auth-throttle.ts';
import type { AuthContext } from './context.ts';
import { createKeyRing } from './key-ring.ts';
import { AuthMetrics } from './metrics.ts';
import { buildMetricsServer } from './metrics-server.ts';
import { createDirectory } from './registry.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import { serveUntilSignal } from '../../lib/web/serve.ts';
import { createStores } from './stores/create-stores.ts';
import { timeAuthStores, timeBucketStore } from './stores/timed-stores.ts';
import { createPasswordGate, defaultHashConcurrency } from './password-gate.ts';
import { createSignInThrottle } from './throttle.ts';
import { watchFile } from './watched-file.ts';

const config = loadAuthServerConfig(process.env);
const log = pino({ level: config.LOG_LEVEL, base: { service: 'auth-server' } });
const now = () => Date.now();

const watch = <T>(path: string, parse: (text: string) => T) =>
  watchFile({
    path,
    parse,
    checkMs: config.AUTH_FILE_CHECK_MS,
    now,
    onReload: (p) => log.info({ file: p }, 'file reloaded'),
    onError: (p, err) =>
      log.error(
        { file: p, err: err instanceof Error ? err.message : String(err) },
        'file not reloaded; keeping the previous content',
      ),
  });

const clients = watch(config.AUTH_CLIENTS_FILE, (t) =>
  clientIdsBesideAudience(
    parseJsonFile(clientRegistrySchema, t, config.AUTH_CLIENTS_FILE),
    config.AUTH_AUDIENCE,
    config.AUTH_CLIENTS_FILE,
  ),
);
const users = watch(config.AUTH_USERS_FILE, (t) =>
  parseJsonFile(usersFileSchema, t, config.AUTH_USERS_FILE),
);
let keysFile: () => SigningKeysFile;
if (config.AUTH_KEYS_FILE !== undefined) {
  const path = config.AUTH_KEYS_FILE;
  const keys = watch(path, (t) => parseJsonFile(signingKeysFileSchema, t, path));
  keysFile = () => keys.current();
} else {
  const generated = await generateSigningJwks({ alg: config.AUTH_SIGNING_ALG });
  keysFile = () => generated;
  log.warn(
    { kid: generated.keys[0]?.kid },
    'AUTH_KEYS_FILE not set: signing with a key generated at start (single replica only)',
  );
}

const { stores: rawStores, buckets: rawBuckets } = await createStores(
  config.REDIS_URL,
  config.AUTH_NAMESPACE,
  now,
  (err) =>
    // The message only: an ioredis error can carry command arguments.
    log.warn(
      { err: err.message },
      'redis connection error; requests needing state answer 503 until it returns',
    ),
);
const metrics = new AuthMetrics();
// Store latency is measured on the monotonic clock (ms), not the wall clock the stores use.
const monotonicMs = () => performance.now();
const observeStore = (operation: string, seconds: number, ok: boolean) =>
  metrics.storeCall(rawStores.kind, operation, seconds, ok);
const stores = timeAuthStores(rawStores, monotonicMs, observeStore);
const buckets = timeBucketStore(rawBuckets, monotonicMs, observeStore);
const ctx: AuthContext = {
  settings: {
    issuer: config.AUTH_ISSUER,
    audience: config.AUTH_AUDIENCE,
    accessTokenTtlSeconds: config.AUTH_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: config.AUTH_REFRESH_TOKEN_TTL_SECONDS,
    refreshFamilyMaxAgeSeconds: config.AUTH_REFRESH_FAMILY_MAX_AGE_SECONDS,
    refreshReuseGraceSeconds: config.AUTH_REFRESH_REUSE_GRACE_SECONDS,
    codeTtlSeconds: config.AUTH_CODE_TTL_SECONDS,
    interactionTtlSeconds: config.AUTH_INTERACTION_TTL_SECONDS,
    ...(config.AUTH_SIGN_IN_SESSIONS
      ? {
          sessions: {
            idleSeconds: config.AUTH_SESSION_IDLE_SECONDS,
            maxAgeSeconds: config.AUTH_SESSION_MAX_AGE_SECONDS,
          },
        }
      : {}),
  },
  directory: createDirectory(clients, users),
  keys: createKeyRing(keysFile),
  stores,
  throttle: createSignInThrottle(
    buckets,
    {
      perUsernameAndAddress: {
        burst: config.AUTH_SIGNIN_USER_ADDRESS_BURST,
        perMinute: config.AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE,
      },
      perUsername: {
        burst: config.AUTH_SIGNIN_USER_BURST,
        perMinute: config.AUTH_SIGNIN_USER_PER_MINUTE,
      },
      perAddress: {
        burst: config.AUTH_SIGNIN_ADDRESS_BURST,
        perMinute: config.AUTH_SIGNIN_ADDRESS_PER_MINUTE,
      },
    },
    (err) =>
      log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'sign-in throttle store unavailable; refusing the attempt',
      ),
  ),
  passwordGate: createPasswordGate({
    concurrency: config.AUTH_PASSWORD_HASH_CONCURRENCY ?? defaultHashConcurrency(),
    queue: config.AUTH_PASSWORD_HASH_QUEUE,
    perKey: config.AUTH_PASSWORD_HASH_PER_ADDRESS,
  }),
  clientAuthThrottle: createClientAuthThrottle(
    {
      ...defaultClientAuthLimits,
      burst: config.AUTH_CLIENT_AUTH_FAILURES_BURST,
      refillSeconds: config.AUTH_CLIENT_AUTH_FAILURE_REFILL_SECONDS,
    },
    now,
  ),
  metrics,
  now,
  secureCookies: config.AUTH_ISSUER.startsWith('https://'),
};
// Fail at start, not at the first request, when the keys do not import.
await ctx.keys.signer();

const app = await buildApp({ ctx, logger: log, trustProxy: config.AUTH_TRUST_PROXY });

const metricsServer =
  config.AUTH_METRICS_PORT === 0 ? undefined : buildMetricsServer(metrics.registry);
if (metricsServer !== undefined) {
  metricsServer.listen(config.AUTH_METRICS_PORT, config.HOST);
  try {
    await Promise.race([
      once(metricsServer, 'listening'),
      once(metricsServer, 'error').then(([err]: unknown[]) => Promise.reject(err)),
    ]);
  } catch (err) {
    log.error(
      { err: err instanceof Error ? err.message : String(err), port: config.AUTH_METRICS_PORT },
      'could not listen on the metrics port',
    );
    process.exit(1);
  }
}

await serveUntilSignal(app, {
  port: config.PORT,
  host: config.HOST,
  log,
  release: () =>
    Promise.all([
      stores.close(),
      buckets.close(),
      new Promise<void>((resolve) =>
        metricsServer === undefined ? resolve() : metricsServer.close(() => resolve()),
      ),
    ]),
});
log.info(
  {
    issuer: config.AUTH_ISSUER,
    port: config.PORT,
    store: stores.kind,
    clients: clients.current().clients.length,
    users: users.current().users.length,
  },
  'auth server listening',
);
if (metricsServer !== undefined)
  log.info({ port: config.AUTH_METRICS_PORT }, 'metrics listening (GET /metrics)');

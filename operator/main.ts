// Operator entry point: the only place reading process.env and argv, creating the real clock and
// Kubernetes client, and listening. `node operator/main.ts [--flag value ...]` (see config.ts).
// SIGTERM/SIGINT: stop reconciling (in-flight reconciles finish), release the lease, exit 0.
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { buildOperator } from './app.ts';
import { leaderIdentity } from './config-settings.ts';
import { loadOperatorConfig, type OperatorConfig } from './config.ts';
import { systemClock } from './runtime/clock.ts';
import { createHealthServer } from './runtime/health-server.ts';
import { createHttpKubeClient, type RequestRecord } from './runtime/http-kube-client.ts';
import { createMetrics } from './runtime/metrics.ts';
import { createRequestRateLimiter } from './runtime/request-rate-limiter.ts';
import { createTenantRedisUsers } from './redis/tenant-redis-users.ts';

/** The clients' default field manager: the leader lease and Events (each controller writes as its own, app.ts). */
export const FIELD_MANAGER = 'portcullis-operator';

let config: OperatorConfig;
try {
  config = loadOperatorConfig(process.env, process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
const log = pino({ level: config.LOG_LEVEL, base: { component: 'operator' } });

const kubeConfig = new KubeConfig();
if (config.KUBECONFIG !== undefined) kubeConfig.loadFromFile(config.KUBECONFIG);
else kubeConfig.loadFromDefault();

const metrics = createMetrics();
const onRequest = (r: RequestRecord) => metrics.recordRequest(r);
// Informers and reconciles share one request rate; the lease has its own client without one (a few
// requests every retry period), as client-go's leader election does.
const rateLimiter = createRequestRateLimiter(
  { qps: config.PORTCULLIS_KUBE_QPS, burst: config.PORTCULLIS_KUBE_BURST },
  systemClock,
);
const client = createHttpKubeClient(kubeConfig, {
  fieldManager: FIELD_MANAGER,
  onRequest,
  rateLimiter,
});
const leaseClient = createHttpKubeClient(kubeConfig, { fieldManager: FIELD_MANAGER, onRequest });
const identity = leaderIdentity(config);

// The namespaces' own Redis users, made with the admin URL of the operator's Redis Secrets.
const redisUsers = config.PORTCULLIS_REDIS_TENANT_USERS
  ? createTenantRedisUsers((err) =>
      log.warn(
        { err: err.message },
        'could not set a namespace Redis user again after a reconnect',
      ),
    )
  : undefined;

let shuttingDown = false;
const { manager } = buildOperator({
  client,
  leaseClient,
  redisUsers,
  clock: systemClock,
  log,
  metrics,
  config,
  identity,
  // Never reconcile without the lease: exit and let the Deployment restart us as a standby.
  onLeadershipLost: () => {
    log.error('leader lease lost: exiting');
    process.exit(1);
  },
});

const health = createHealthServer({
  registry: metrics.registry,
  ready: () => manager.ready,
  describe: () => (manager.leading ? 'leader' : 'standby'),
});
health.listen(config.PORT, config.HOST, () =>
  log.info({ port: config.PORT, identity }, 'operator listening (/healthz /readyz /metrics)'),
);

async function shutdown(signal: string): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  log.info({ signal }, 'shutting down');
  const force = setTimeout(() => {
    log.error('shutdown took too long: exiting');
    process.exit(1);
  }, config.PORTCULLIS_SHUTDOWN_GRACE_MS);
  force.unref();
  try {
    await manager.stop();
    await redisUsers?.close();
    await new Promise<void>((resolve) => health.close(() => resolve()));
    log.info('stopped');
    process.exit(0);
  } catch (err) {
    log.error({ err }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await manager.start();
  log.info(
    {
      leaderElection: config.PORTCULLIS_LEADER_ELECTION,
      namespaces: config.PORTCULLIS_WATCH_NAMESPACES,
    },
    'operator started',
  );
} catch (err) {
  log.error({ err }, 'operator failed to start');
  process.exit(1);
}

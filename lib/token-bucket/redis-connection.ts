// The Redis store's connection: one ioredis client for a single node, a Sentinel master set or a
// Cluster, with the store's failure settings (no offline queue, no retries, quick reconnects).
// The store's own timeout (call-deadlines.ts) replaces ioredis' per-command one.
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

/** Where the store's Redis is and how to reach it. */
export interface RedisConnectionOptions {
  /** Single node: redis[s]://[user:password@]host:port[/db]. */
  readonly url?: string;
  /** Redis Sentinel: master set name and sentinel addresses. */
  readonly sentinel?: {
    readonly name: string;
    readonly sentinels: readonly { host: string; port: number }[];
    readonly sentinelPassword?: string;
  };
  /** Redis Cluster seed nodes. */
  readonly cluster?: { readonly nodes: readonly { host: string; port: number }[] };
  /** Password when not in the URL (e.g. from a mounted Secret). */
  readonly password?: string;
  /** Longest wait to connect, ms. */
  readonly connectTimeoutMs?: number;
}

/**
 * ioredis' reconnectOnError for every client of a namespace's Redis user: a Redis that restarted
 * empty may take the connection before the user is set again (the operator replays the users on
 * reconnect); the AUTH then failed and every command is refused with NOAUTH/WRONGPASS. Reconnect,
 * and so authenticate again, instead of staying refused.
 */
export const reconnectOnAuthLoss = (err: Error): boolean => /^(NOAUTH|WRONGPASS)/.test(err.message);

/** A client for the configured topology (a Cluster, else a Sentinel master set, else one node). */
export function createRedisClient(options: RedisConnectionOptions): Redis | Cluster {
  const common: RedisOptions = {
    connectTimeout: options.connectTimeoutMs ?? 2000,
    // Fail fast while disconnected instead of queueing: the caller's policy decides.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // Reconnect quickly and forever: limiting resumes within ~0.5 s of Redis returning.
    retryStrategy: (times) => Math.min(50 * times, 500),
    reconnectOnError: reconnectOnAuthLoss,
    ...(options.password !== undefined ? { password: options.password } : {}),
  };
  let client: Redis | Cluster;
  if (options.cluster !== undefined) {
    const nodes: ClusterNode[] = options.cluster.nodes.map((n) => ({ host: n.host, port: n.port }));
    client = new Cluster(nodes, {
      enableOfflineQueue: false,
      clusterRetryStrategy: (times) => Math.min(50 * times, 500),
      redisOptions: common,
    });
  } else if (options.sentinel !== undefined) {
    client = new Redis({
      ...common,
      name: options.sentinel.name,
      sentinels: options.sentinel.sentinels.map((s) => ({ host: s.host, port: s.port })),
      ...(options.sentinel.sentinelPassword !== undefined
        ? { sentinelPassword: options.sentinel.sentinelPassword }
        : {}),
    });
  } else {
    client = new Redis(options.url ?? 'redis://127.0.0.1:6379', common);
  }
  // Errors surface through rejected takes and the caller's metrics; without a listener ioredis
  // would print every reconnect attempt.
  client.on('error', () => {});
  return client;
}

/** Resolves once `client` is connected and ready for commands. */
export async function clientReady(client: Redis | Cluster): Promise<void> {
  if (client.status === 'ready') return;
  await new Promise<void>((resolve) => client.once('ready', () => resolve()));
}

/**
 * Closes `client`: QUIT waits for the calls ahead of it; a stalled Redis gets `timeoutMs`, then
 * the cut (whose own close would wait for the stalled peer too, so it is not awaited).
 */
export async function closeClient(client: Redis | Cluster, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const quit = client.quit().then(
    () => true,
    () => false,
  );
  const answered = await Promise.race([
    quit,
    new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (!answered) client.disconnect();
}

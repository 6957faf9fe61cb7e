// The one place that chooses the store adapters: Redis when REDIS_URL is set, memory otherwise.
// The sign-in throttle uses the sidecar's BucketStore adapters on the same choice.
import { Redis } from 'ioredis';
import { MemoryBucketStore } from '../../../lib/token-bucket/memory-store.ts';
import { reconnectOnAuthLoss } from '../../../lib/token-bucket/redis-connection.ts';
import { RedisBucketStore } from '../../../lib/token-bucket/redis-store.ts';
import type { BucketStore } from '../../../lib/token-bucket/bucket-store.ts';
import { createMemoryStores } from './memory.ts';
import { createRedisStores } from './redis.ts';
import type { AuthStores } from './types.ts';
import { authKeyPrefix } from '../../../lib/tenancy/tenant-keys.ts';

export interface CreatedStores {
  readonly stores: AuthStores;
  readonly buckets: BucketStore;
}

/** Called with each connection error of the Redis client (it reconnects by itself). */
export type RedisErrorListener = (err: Error) => void;

export async function createStores(
  redisUrl: string | undefined,
  namespace: string,
  now: () => number,
  onRedisError: RedisErrorListener,
): Promise<CreatedStores> {
  if (redisUrl === undefined) {
    return { stores: createMemoryStores(now), buckets: new MemoryBucketStore({ now }) };
  }
  const redis = new Redis(redisUrl, {
    // Fail a command within 1 s rather than hang a sign-in; the request then gets a 503.
    commandTimeout: 1000,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy: (times) => Math.min(50 * times, 1000),
    reconnectOnError: reconnectOnAuthLoss,
    lazyConnect: true,
  });
  // Without a listener ioredis prints "Unhandled error event" to stderr, outside the JSON logs.
  redis.on('error', onRedisError);
  await redis.connect();
  // Every key under the namespace's prefix (lib/tenancy): the namespace's Redis user may touch no other.
  const prefix = authKeyPrefix(namespace);
  const buckets = new RedisBucketStore({
    url: redisUrl,
    keyPrefix: `${prefix}signin:`,
    commandTimeoutMs: 200,
  });
  await buckets.ready();
  return { stores: createRedisStores(redis, prefix), buckets };
}

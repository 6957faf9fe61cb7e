// The one place that picks a BucketStore from config: Redis when configured, memory otherwise.
import { readFileSync } from 'node:fs';
import type { RedisConfig, SidecarConfig } from '../lib/config/sidecar.ts';
import type { BucketStore } from '../lib/token-bucket/bucket-store.ts';
import { MemoryBucketStore } from '../lib/token-bucket/memory-store.ts';
import { keyHashSecretOf } from '../lib/token-bucket/key-hash.ts';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';

export interface StoreChoice {
  readonly store: BucketStore;
  /** `memory` or `redis` (a metric label). */
  readonly kind: 'memory' | 'redis';
}

/**
 * Keys whose last refusal the Redis store remembers, to refuse the same take again without a call
 * while its bucket cannot have refilled (ADR 0015): ~380 bytes of heap each (the key, its
 * tokens and the entry; measured with 10,000 keys of 60 characters), so at most ~3.7 MiB.
 */
const LOCAL_REFUSAL_KEYS = 10_000;

/** What a store reports, for the metrics. */
export interface StoreHooks {
  /** The Redis store refused a take without a call. */
  readonly onRefusedLocally?: () => void;
  /** The memory store forgot `count` full buckets to make room. */
  readonly onEvicted?: (count: number) => void;
  /** The memory store refused a take that would add a bucket past its bound. */
  readonly onRefusedFull?: () => void;
}

export function createBucketStore(
  redis: RedisConfig | undefined,
  memory: SidecarConfig['memory'],
  now: () => number,
  hooks: StoreHooks = {},
): StoreChoice {
  const { onRefusedLocally, onEvicted, onRefusedFull } = hooks;
  if (redis === undefined) {
    const bound = { maxBuckets: memory.maxBuckets, maxBytes: memory.maxBytes };
    return {
      store: new MemoryBucketStore({
        now,
        ...bound,
        ...(onEvicted !== undefined ? { onEvicted } : {}),
        ...(onRefusedFull !== undefined ? { onRefusedFull } : {}),
      }),
      kind: 'memory',
    };
  }
  const password =
    redis.passwordFile === undefined ? undefined : readFileSync(redis.passwordFile, 'utf8').trim();
  const keyHashSecret = redis.hashKeys ? keyHashSecretFor(redis, password) : undefined;
  return {
    kind: 'redis',
    store: new RedisBucketStore({
      ...(redis.url !== undefined ? { url: redis.url } : {}),
      ...(redis.sentinel !== undefined ? { sentinel: redis.sentinel } : {}),
      ...(redis.cluster !== undefined ? { cluster: redis.cluster } : {}),
      ...(password !== undefined ? { password } : {}),
      keyPrefix: redis.keyPrefix,
      ...(keyHashSecret !== undefined ? { keyHashSecret } : {}),
      commandTimeoutMs: redis.commandTimeoutMs,
      connectTimeoutMs: redis.connectTimeoutMs,
      localRefusals: LOCAL_REFUSAL_KEYS,
      ...(onRefusedLocally !== undefined ? { onRefusedLocally } : {}),
    }),
  };
}

/** The Redis password (passwordFile, else the URL's) keys the bucket-key HMAC (key-hash.ts). */
function keyHashSecretFor(redis: RedisConfig, password: string | undefined): string {
  return keyHashSecretOf(
    password ?? (redis.url === undefined ? '' : decodeURIComponent(new URL(redis.url).password)),
  );
}

// The one place that picks a BucketStore from config: Redis when configured, memory otherwise.
import { readFileSync } from 'node:fs';
import type { RedisConfig } from '../config.ts';
import type { BucketStore } from './bucket-store.ts';
import { MemoryBucketStore } from './memory.ts';
import { RedisBucketStore } from './redis.ts';

export interface StoreChoice {
  readonly store: BucketStore;
  /** `memory` or `redis` (a metric label). */
  readonly kind: 'memory' | 'redis';
}

export function createBucketStore(redis: RedisConfig | undefined, now: () => number): StoreChoice {
  if (redis === undefined) return { store: new MemoryBucketStore({ now }), kind: 'memory' };
  const password = redis.passwordFile === undefined ? undefined : readFileSync(redis.passwordFile, 'utf8').trim();
  return {
    kind: 'redis',
    store: new RedisBucketStore({
      ...(redis.url !== undefined ? { url: redis.url } : {}),
      ...(redis.sentinel !== undefined ? { sentinel: redis.sentinel } : {}),
      ...(redis.cluster !== undefined ? { cluster: redis.cluster } : {}),
      ...(password !== undefined ? { password } : {}),
      keyPrefix: redis.keyPrefix,
      commandTimeoutMs: redis.commandTimeoutMs,
      connectTimeoutMs: redis.connectTimeoutMs,
    }),
  };
}

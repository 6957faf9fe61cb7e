// The load of the redis-cost suite: the rule, the users and the decisions in flight, and the three
// ways of keeping the counts that it compares (bench/redis-cost.ts says how each is measured).
import { Redis } from 'ioredis';
import type { BucketRule } from '../lib/token-bucket/bucket.ts';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';

export const IN_FLIGHT = 256;
export const USERS = 1000;
export const RULE: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };

/** Two keys per bucket, whole seconds from the caller: the shape of Spring Cloud Gateway's limiter. */
const TWO_KEY_BUCKET = `
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])
local ttl = math.floor(capacity / rate * 2)
local tokens = tonumber(redis.call('GET', KEYS[1])) or capacity
local refreshed = tonumber(redis.call('GET', KEYS[2])) or 0
local filled = math.min(capacity, tokens + math.max(0, now - refreshed) * rate)
local allowed = filled >= requested
if allowed then filled = filled - requested end
if ttl > 0 then
  redis.call('SETEX', KEYS[1], ttl, filled)
  redis.call('SETEX', KEYS[2], ttl, now)
end
return { allowed and 1 or 0, filled }
`;

export interface Approach {
  readonly name: string;
  readonly calls: string;
  /** Returns one decision function bound to a connection (or store) of its own. */
  open(
    url: string,
  ): Promise<{ decide: (user: number) => Promise<unknown>; close: () => Promise<void> }>;
}

/** Our exact bucket through RedisBucketStore (maxBatch: takes per script call, its default when unset). */
const bucket = (name: string, calls: string, keyPrefix: string, maxBatch?: number): Approach => ({
  name,
  calls,
  async open(url) {
    const store = new RedisBucketStore({ url, keyPrefix, commandTimeoutMs: 5000, maxBatch });
    await store.ready();
    return { decide: (user) => takeOne(store, `u${user}`, RULE), close: () => store.close() };
  },
});

export const approaches = (mode: 'light' | 'saturated'): Approach[] => [
  bucket(
    'portcullis exact bucket',
    mode === 'light' ? 'one script call per take' : 'takes of a turn batched into one script call',
    'pc:',
  ),
  ...(mode === 'saturated'
    ? [
        bucket(
          'portcullis exact bucket, batching off',
          'one script call per take (pipelined)',
          'pc1:',
          1,
        ),
      ]
    : []),
  {
    name: 'two-key bucket (Spring Cloud Gateway style)',
    calls: 'one script call per take',
    async open(url) {
      const redis = new Redis(url, { enableAutoPipelining: true });
      redis.defineCommand('twoKeyTake', { numberOfKeys: 2, lua: TWO_KEY_BUCKET });
      const take = (
        redis as unknown as { twoKeyTake: (...a: (string | number)[]) => Promise<unknown> }
      ).twoKeyTake.bind(redis);
      return {
        decide: (user) => {
          const keys = [`scg.{u${user}}.tokens`, `scg.{u${user}}.timestamp`];
          const now = Math.floor(Date.now() / 1000); // whole seconds from the client
          const { replenishRate: rate, burstCapacity: capacity, requestedTokens } = RULE;
          return take(...keys, rate, capacity, now, requestedTokens);
        },
        close: async () => void redis.disconnect(),
      };
    },
  },
  {
    name: 'fixed window (envoy ratelimit style)',
    calls: 'INCRBY + EXPIRE pipelined per decision',
    async open(url) {
      const redis = new Redis(url, { enableAutoPipelining: true });
      return {
        decide: (user) => {
          const window = Math.floor(Date.now() / 1000);
          const key = `fw_u${user}_${window}`;
          return redis.pipeline().incrby(key, 1).expire(key, 2).exec();
        },
        close: async () => void redis.disconnect(),
      };
    },
  },
];

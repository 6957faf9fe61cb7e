// The pure bucket math (lib/token-bucket/bucket.ts) and the Lua script (lib/token-bucket/token-bucket.lua)
// on the same request sequences must give identical decisions and identical stored state: the
// state as of each decision is in the script's reply, the stored one is written only when a take
// is admitted (the pure side keeps its state the same way), and a refused take leaves the key,
// TTL included, as it was.
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bucketTtlMs, takeAllUs, takeUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { RedisBucketStore } from '../../lib/token-bucket/redis-store.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';

describe('pure token bucket vs the Redis Lua script', () => {
  let redis: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.stop();
  });

  it('identical decisions and state for random sequences at explicit times', async () => {
    let clockMs = 0;
    const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 5000, clockForTests: () => clockMs });
    await store.ready();
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.record({ replenishRate: fc.integer({ min: 1, max: 500 }), burstCapacity: fc.integer({ min: 1, max: 500 }) }),
          fc.array(fc.tuple(fc.integer({ min: -50_000, max: 3_000_000 }), fc.nat()), { minLength: 1, maxLength: 60 }),
          async (limits, steps) => {
            const rule: BucketRule = { ...limits, requestedTokens: 1 };
            const key = `eq-${run++}`;
            let state: BucketState | undefined;
            // A realistic epoch in µs (16 digits) so large-number formatting is exercised too.
            let nowUs = 1_795_000_000_000_000 + run * 1000;
            for (const [gapUs, c] of steps) {
              nowUs += gapUs; // negative gaps: a clock going backwards
              const cost = c % (rule.burstCapacity + 1);
              // The key's TTL runs on real time, the test's clock does not: a key that expired
              // since the last admitted take (a slow machine) is a full bucket on both sides.
              const ttlBefore = await admin.pttl(store.keyOf(key));
              if (ttlBefore === -2) state = undefined;
              const pure = takeUs(state, rule, nowUs, cost);
              if (pure.decision.allowed) state = pure.state;
              clockMs = nowUs / 1000;
              const lua = await store.takeRaw(key, rule, cost);
              expect(lua.decision).toEqual(pure.decision);
              expect(lua.microTokens).toBe(pure.state.microTokens);
              expect(lua.nowUs).toBe(nowUs);
              expect(decodeBucketValue(await admin.getBuffer(store.keyOf(key)))).toEqual(state);
              const ttl = await admin.pttl(store.keyOf(key));
              if (pure.decision.allowed) expect(ttl).toBeGreaterThan(bucketTtlMs(rule) - 1000);
              else expect(ttl).toBeLessThanOrEqual(ttlBefore);
            }
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      await store.close();
    }
  });

  it('several limits on one take: identical decisions (each bucket and the combined one) and state, in batches mixed with single takes', async () => {
    let clockMs = 0;
    const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 5000, clockForTests: () => clockMs });
    await store.ready();
    let run = 0;
    const limitArb = fc.record({ replenishRate: fc.integer({ min: 1, max: 500 }), burstCapacity: fc.integer({ min: 1, max: 500 }) });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(limitArb, { minLength: 1, maxLength: 4 }),
          fc.array(fc.tuple(fc.integer({ min: -50_000, max: 3_000_000 }), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 40 }),
          async (limits, steps) => {
            const rules: BucketRule[] = limits.map((l) => ({ ...l, requestedTokens: 1 }));
            const key = `multi-${run++}`;
            const single: BucketRule = { replenishRate: 3, burstCapacity: 4, requestedTokens: 1 };
            let states: readonly (BucketState | undefined)[] = rules.map(() => undefined);
            let nowUs = 1_795_000_000_000_000 + run * 1000;
            for (const [gapUs, c, withSingle] of steps) {
              nowUs += gapUs;
              const costs = rules.map((r) => c % (r.burstCapacity + 1));
              // Keys expire on real time, the test's clock is its own (see above).
              const present = await Promise.all(rules.map((_, i) => admin.exists(store.keyOf(key, i))));
              states = states.map((st, i) => (present[i] === 1 ? st : undefined));
              const pure = takeAllUs(states, rules, nowUs, costs);
              if (pure.decision.allowed) states = pure.states;
              clockMs = nowUs / 1000;
              // Sometimes another one-bucket take joins the same script call (one batch).
              const [lua] = await Promise.all([store.takeRaw(key, rules, costs), withSingle ? store.takeRaw(`${key}-single`, single) : undefined]);
              expect(lua.decision).toEqual(pure.decision);
              expect(lua.tokens).toEqual(pure.states.map((st) => st.microTokens));
              for (const [i, state] of states.entries()) {
                expect(decodeBucketValue(await admin.getBuffer(store.keyOf(key, i)))).toEqual(state);
              }
            }
          },
        ),
        { numRuns: 40 },
      );
    } finally {
      await store.close();
    }
  });

  it('with Redis TIME: each decision equals the pure function at the time the script used', async () => {
    const store = new RedisBucketStore({ url: redis.url, commandTimeoutMs: 5000 });
    await store.ready();
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };
    let state: BucketState | undefined;
    try {
      for (let i = 0; i < 40; i++) {
        const lua = await store.takeRaw('redis-time', rule);
        const pure = takeUs(state, rule, lua.nowUs, 2);
        if (pure.decision.allowed) state = pure.state;
        expect(lua.decision).toEqual(pure.decision);
        expect(lua.microTokens).toBe(pure.state.microTokens);
        if (i % 8 === 0) await new Promise((r) => setTimeout(r, 37));
      }
    } finally {
      await store.close();
    }
  });
});

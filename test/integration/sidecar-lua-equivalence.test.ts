// The pure bucket math (lib/token-bucket/bucket.ts) and the Lua script (lib/token-bucket/token-bucket.lua)
// on the same request sequences must give identical decisions and identical stored state: the
// state as of each decision is in the script's reply, the stored one is written only when a take
// is admitted (the pure side keeps its state the same way), and a refused take leaves the key,
// TTL included, as it was.
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bucketTtlMs,
  takeAllUs,
  takeUs,
  type BucketRule,
  type BucketState,
} from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import type { RawTake } from '../../lib/token-bucket/redis-reply.ts';
import { runTakes, type ScriptTake } from '../../lib/token-bucket/take-script.ts';
import { startRedis, type RedisServer } from '../harness/redis.ts';

describe('pure token bucket vs the Redis Lua script', () => {
  let redis: RedisServer;
  let admin: Redis;
  /** The script as the Redis store calls it, on its own connection. */
  let client: Redis;
  /** Redis key of bucket `i` of a take whose first bucket is `key`. */
  const bucketKey = (key: string, i = 0) => (i === 0 ? key : `${key}:${i}`);
  /** One script call for `takes` (at `nowUs`, else Redis TIME): the first take's answer. */
  async function firstTake(takes: readonly ScriptTake[], nowUs?: number): Promise<RawTake> {
    const [first] = await runTakes(client, takes, nowUs);
    if (first === undefined) throw new Error('the script answered no take');
    return first;
  }
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    admin.disconnect();
    client.disconnect();
    await redis.stop();
  });

  it('identical decisions and state for random sequences at explicit times', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          replenishRate: fc.integer({ min: 1, max: 500 }),
          burstCapacity: fc.integer({ min: 1, max: 500 }),
        }),
        fc.array(fc.tuple(fc.integer({ min: -50_000, max: 3_000_000 }), fc.nat()), {
          minLength: 1,
          maxLength: 60,
        }),
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
            const ttlBefore = await admin.pttl(bucketKey(key));
            if (ttlBefore === -2) state = undefined;
            const pure = takeUs(state, rule, nowUs, cost);
            if (pure.decision.allowed) state = pure.state;
            const lua = await firstTake([{ key, rules: [rule], costs: [cost] }], nowUs);
            expect(lua.decision).toEqual(pure.decision);
            expect(lua.microTokens).toBe(pure.state.microTokens);
            expect(lua.nowUs).toBe(nowUs);
            expect(decodeBucketValue(await admin.getBuffer(bucketKey(key)))).toEqual(state);
            const ttl = await admin.pttl(bucketKey(key));
            if (pure.decision.allowed) expect(ttl).toBeGreaterThan(bucketTtlMs(rule) - 1000);
            else expect(ttl).toBeLessThanOrEqual(ttlBefore);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('several limits on one take: identical decisions (each bucket and the combined one) and state, in batches mixed with single takes', async () => {
    let run = 0;
    const limitArb = fc.record({
      replenishRate: fc.integer({ min: 1, max: 500 }),
      burstCapacity: fc.integer({ min: 1, max: 500 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(limitArb, { minLength: 1, maxLength: 4 }),
        fc.array(fc.tuple(fc.integer({ min: -50_000, max: 3_000_000 }), fc.nat(), fc.boolean()), {
          minLength: 1,
          maxLength: 40,
        }),
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
            const present = await Promise.all(rules.map((_, i) => admin.exists(bucketKey(key, i))));
            states = states.map((st, i) => (present[i] === 1 ? st : undefined));
            const pure = takeAllUs(states, rules, nowUs, costs);
            if (pure.decision.allowed) states = pure.states;
            // Sometimes another one-bucket take joins the same script call (one batch).
            const takes = [
              { key, rules, costs },
              ...(withSingle ? [{ key: `${key}-single`, rules: [single], costs: [1] }] : []),
            ];
            const lua = await firstTake(takes, nowUs);
            expect(lua.decision).toEqual(pure.decision);
            expect(lua.tokens).toEqual(pure.states.map((st) => st.microTokens));
            for (const [i, state] of states.entries()) {
              expect(decodeBucketValue(await admin.getBuffer(bucketKey(key, i)))).toEqual(state);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('with Redis TIME: each decision equals the pure function at the time the script used', async () => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };
    let state: BucketState | undefined;
    for (let i = 0; i < 40; i++) {
      const lua = await firstTake([{ key: 'redis-time', rules: [rule], costs: [2] }]);
      const pure = takeUs(state, rule, lua.nowUs, 2);
      if (pure.decision.allowed) state = pure.state;
      expect(lua.decision).toEqual(pure.decision);
      expect(lua.microTokens).toBe(pure.state.microTokens);
      if (i % 8 === 0) await new Promise((r) => setTimeout(r, 37));
    }
  });
});

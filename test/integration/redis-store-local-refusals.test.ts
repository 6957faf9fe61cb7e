// The Redis store's local refusals (ADR 0015): after Redis refuses a take, the same take is refused
// without a script call while its bucket cannot have refilled to the cost, with the headers Redis
// would give; then Redis decides again. Other rules (a reload), a forgotten key and a refill due
// within 1 ms go to Redis. Several stores on one key stay exact: none admits past the bound and
// none refuses a token the bucket held.
import { performance } from 'node:perf_hooks';
import { describe, expect } from 'vitest';
import type { BucketRule, Decision } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { RedisBucketStore, type RedisStoreOptions } from '../../lib/token-bucket/redis-store.ts';
import { test } from '../harness/fixtures.ts';
import { scriptCalls } from '../harness/redis.ts';
import { takeAll, takeOne } from '../../lib/token-bucket/take-promise.ts';
import { Lateness } from '../harness/stalls.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const it = test.extend(
  'withStore',
  { scope: 'file' },
  ({ redis }) =>
    async (
      options: Omit<RedisStoreOptions, 'url'>,
      body: (store: RedisBucketStore, refusedHere: () => number) => Promise<void>,
    ): Promise<void> => {
      let refused = 0;
      const store = new RedisBucketStore({
        url: redis.url,
        commandTimeoutMs: 5000,
        onRefusedLocally: () => refused++,
        ...options,
      });
      await store.ready();
      try {
        await body(store, () => refused);
      } finally {
        await store.close();
      }
    },
);

describe('refusals answered by the Redis store itself', () => {
  it('refuses again without a call until the bucket can hold the cost, with the headers Redis gives; then asks Redis', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    // 5 tokens a second: a refused take waits up to 200 ms.
    const rule: BucketRule = { replenishRate: 5, burstCapacity: 1, requestedTokens: 1 };
    await withStore({ localRefusals: 100 }, async (store, refusedHere) => {
      await takeOne(store, 'warm-up', rule); // loads the script
      expect((await takeOne(store, 'flood', rule)).allowed).toBe(true);
      const fromRedis = await takeOne(store, 'flood', rule);
      expect(fromRedis.allowed).toBe(false);
      expect(fromRedis.retryAfterMs).toBeGreaterThan(150);
      const calls = await scriptCalls(admin);
      const local: Decision[] = [];
      for (let i = 0; i < 5; i++) local.push(await takeOne(store, 'flood', rule));
      expect(await scriptCalls(admin)).toBe(calls);
      expect(refusedHere()).toBe(5);
      for (const d of local) {
        expect(d).toMatchObject({ allowed: false, remaining: 0, limit: 1, cost: 1 });
        expect(d.limits).toBeUndefined();
        // The wait only shortens, and never past what is left of Redis' own.
        expect(d.retryAfterMs).toBeGreaterThan(0);
        expect(d.retryAfterMs).toBeLessThanOrEqual(fromRedis.retryAfterMs);
        expect(d.resetMs).toBe(d.retryAfterMs);
      }
      // Past Redis' wait the take is Redis' again, and the token has come back.
      await sleep(fromRedis.retryAfterMs + 20);
      expect((await takeOne(store, 'flood', rule)).allowed).toBe(true);
      expect(await scriptCalls(admin)).toBe(calls + 1);
      expect(refusedHere()).toBe(5);
    });
  });

  it('several limits: refused while one is short, each limit reported as Redis would', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const perSecond: BucketRule = { replenishRate: 1, burstCapacity: 1, requestedTokens: 1 };
    const perMinuteIsh: BucketRule = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };
    const rules = [perSecond, perMinuteIsh];
    const costs = [1, 1];
    await withStore({ localRefusals: 100 }, async (store, refusedHere) => {
      await takeAll(store, 'two-warm', rules, costs);
      expect((await takeAll(store, 'two', rules, costs)).allowed).toBe(true);
      const fromRedis = await takeAll(store, 'two', rules, costs);
      expect(fromRedis.allowed).toBe(false);
      const calls = await scriptCalls(admin);
      const local = await takeAll(store, 'two', rules, costs);
      expect(await scriptCalls(admin)).toBe(calls);
      expect(refusedHere()).toBe(1);
      expect(local.allowed).toBe(false);
      expect(local.limits?.length).toBe(2);
      const [short, roomy] = local.limits as Decision[];
      expect(short).toMatchObject({ allowed: false, remaining: 0, limit: 1 });
      expect(short?.retryAfterMs).toBeGreaterThan(900);
      // The second bucket holds its cost: no wait of its own, and its tokens as refilled since.
      expect(roomy).toMatchObject({ allowed: false, retryAfterMs: 0, limit: 100 });
      expect(roomy?.remaining).toBeGreaterThanOrEqual(99);
      // The request's decision is the short bucket's (the longest wait).
      expect(local.retryAfterMs).toBe(short?.retryAfterMs);
    });
  });

  it('a reload keeping the limit is still refused here; another limit, and a refill due within 1 ms, go to Redis', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 2, burstCapacity: 1, requestedTokens: 1 };
    await withStore({ localRefusals: 100 }, async (store, refusedHere) => {
      const costs = [1];
      const rules = [rule];
      await takeAll(store, 'reload', rules, costs);
      expect((await takeAll(store, 'reload', rules, costs)).allowed).toBe(false);
      let calls = await scriptCalls(admin);
      expect((await takeAll(store, 'reload', rules, costs)).allowed).toBe(false);
      expect(await scriptCalls(admin)).toBe(calls);
      // A reload that keeps the limit builds equal objects: still refused here.
      expect((await takeAll(store, 'reload', [{ ...rule }], [1])).allowed).toBe(false);
      expect(await scriptCalls(admin)).toBe(calls);
      expect(refusedHere()).toBe(2);
      // Another limit, or another cost, is Redis' to decide.
      await takeAll(store, 'reload', [{ ...rule, burstCapacity: 2 }], [1]);
      expect(await scriptCalls(admin)).toBe(calls + 1);
      await takeAll(store, 'reload', [{ ...rule, replenishRate: 3 }], [1]);
      expect(await scriptCalls(admin)).toBe(calls + 2);
      expect(refusedHere()).toBe(2);

      // 4,000 tokens a second: a refused take's token is due within 0.25 ms, too soon to remember.
      const fast: BucketRule = { replenishRate: 4000, burstCapacity: 1, requestedTokens: 1 };
      const fastRules = [fast];
      const decisions = await Promise.all(
        Array.from({ length: 3 }, () => takeAll(store, 'fast', fastRules, costs)),
      );
      expect(decisions.map((d) => d.allowed)).toEqual([true, false, false]);
      calls = await scriptCalls(admin);
      await takeAll(store, 'fast', fastRules, costs);
      expect(await scriptCalls(admin)).toBe(calls + 1);
      expect(refusedHere()).toBe(2);
    });
  });

  it('remembers at most localRefusals keys, forgetting the oldest first', async ({
    redisAdmin: admin,
    withStore,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 1, requestedTokens: 1 };
    await withStore({ localRefusals: 2 }, async (store, refusedHere) => {
      for (const key of ['a', 'b', 'c']) {
        await takeOne(store, `keep-${key}`, rule);
        expect((await takeOne(store, `keep-${key}`, rule)).allowed).toBe(false);
      }
      const calls = await scriptCalls(admin);
      await takeOne(store, 'keep-c', rule);
      await takeOne(store, 'keep-b', rule);
      expect(await scriptCalls(admin)).toBe(calls);
      await takeOne(store, 'keep-a', rule);
      expect(await scriptCalls(admin)).toBe(calls + 1);
      expect(refusedHere()).toBe(2);
    });
  });

  it('off by default: every refusal is a script call', async ({ redisAdmin: admin, withStore }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 1, requestedTokens: 1 };
    await withStore({}, async (store, refusedHere) => {
      await takeOne(store, 'off', rule);
      await takeOne(store, 'off', rule);
      const calls = await scriptCalls(admin);
      for (let i = 0; i < 3; i++) expect((await takeOne(store, 'off', rule)).allowed).toBe(false);
      expect(await scriptCalls(admin)).toBe(calls + 3);
      expect(refusedHere()).toBe(0);
    });
  });

  it('three stores hammering one key for 3 s: admitted within one of the bound but for late takes, none over, most refusals without a call', async ({
    redis,
    redisAdmin: admin,
  }) => {
    // A burst of one: a token left untaken while a refusal is wrongly remembered overflows and is lost.
    const rule: BucketRule = { replenishRate: 20, burstCapacity: 1, requestedTokens: 1 };
    let refusedHere = 0;
    const stores = Array.from(
      { length: 3 },
      () =>
        new RedisBucketStore({
          url: redis.url,
          keyPrefix: 'exact:',
          commandTimeoutMs: 5000,
          localRefusals: 100,
          onRefusedLocally: () => refusedHere++,
        }),
    );
    await Promise.all(stores.map((s) => s.ready()));
    const key = stores[0]?.keyOf('hammered') as string;
    try {
      // The first take starts the bucket and gives Redis' time of the first decision.
      expect((await takeOne(stores[0] as RedisBucketStore, 'hammered', rule)).allowed).toBe(true);
      const firstUs = decodeBucketValue(await admin.getBuffer(key))?.updatedUs as number;
      let admitted = 1;
      let refused = 0;
      const callsBefore = await scriptCalls(admin);
      const until = performance.now() + 3000;
      const late = new Lateness();
      await Promise.all(
        stores.flatMap((store) =>
          Array.from({ length: 4 }, async () => {
            while (performance.now() < until) {
              late.turn(1);
              const asked = performance.now();
              const d = await takeOne(store, 'hammered', rule);
              if (d.allowed) late.admitted(asked);
              if (d.allowed) admitted++;
              else refused++;
              // A local refusal settles without I/O: wait a little, as the next request on a socket
              // would, leaving the cores to Redis rather than spinning (12 loops: about 10,000
              // takes a second, far more than the bucket's 20).
              await new Promise((resolve) => setTimeout(resolve, 1));
            }
          }),
        ),
      );
      const calls = (await scriptCalls(admin)) - callsBefore;
      const lastUs = decodeBucketValue(await admin.getBuffer(key))?.updatedUs as number;
      const spanUs = lastUs - firstUs;
      expect(spanUs).toBeGreaterThan(2_500_000);
      // Tokens there were from the first admitted take to the last: the burst and the refill.
      const bound = Math.floor((rule.burstCapacity * 1e6 + rule.replenishRate * spanUs) / 1e6);
      expect(admitted).toBeLessThanOrEqual(bound);
      // A refusal Redis would not have given would leave a token untaken past the last take. So
      // does a take that is merely late, and only the refill of the time the admitted takes were
      // on their way, or this process was not running, is forgiven.
      const forgiven = late.tokensAt(rule.replenishRate);
      expect(admitted).toBeGreaterThanOrEqual(bound - 1 - forgiven);
      expect(refusedHere).toBeGreaterThan(refused / 2);
      // Without local refusals every decision is in some call; here most are in none.
      expect(calls).toBeLessThan((admitted + refused) / 2);
      console.log(
        `local refusals: ${admitted} admitted of a bound of ${bound}, ${refused} refused (${refusedHere} without a call), ${calls} script calls; ${forgiven} tokens forgiven for ${late.ms} ms late`,
      );
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});

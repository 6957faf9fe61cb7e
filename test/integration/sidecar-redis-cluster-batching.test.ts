// Batching on a real three-shard Redis Cluster: the store sends the takes of one event-loop turn
// as one script call per slot (a call may only touch one slot's keys). The slot the store computes
// is Redis' own; each shard runs exactly one call per slot of the turn that it owns; and the
// decisions and stored state are those of the pure function taking the same takes one by one in
// arrival order, for single and multi-limit takes spread over every shard.
import fc from 'fast-check';
import { Cluster, type Redis } from 'ioredis';
import { describe, expect } from 'vitest';
import { takeAllUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { keySlot } from '../../lib/token-bucket/key-slot.ts';
import type { RawTake } from '../../lib/token-bucket/redis-reply.ts';
import { RedisBucketStore, type RedisStoreOptions } from '../../lib/token-bucket/redis-store.ts';
import { runTakes } from '../../lib/token-bucket/take-script.ts';
import { test } from '../harness/fixtures.ts';
import { scriptCalls } from '../harness/redis.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

/** Users whose bucket keys (with the default prefix, route `all`) all hash to one slot. */
function usersSharingASlot(count: number, prefix: string): string[] {
  const bySlot = new Map<number, string[]>();
  for (let i = 0; ; i++) {
    const user = `${prefix}${i}`;
    const slot = keySlot(`portcullis:bucket:v2:{all:${user}}`);
    const users = bySlot.get(slot) ?? [];
    users.push(user);
    bySlot.set(slot, users);
    if (users.length === count) return users;
  }
}

const it = test
  /** A user whose bucket lives on `shard`. */
  .extend('userOnShard', { scope: 'file' }, ({ slotOwner }) => {
    expect(slotOwner.size).toBe(16384);
    return (shard: number, prefix: string): string => {
      for (let i = 0; ; i++)
        if (slotOwner.get(keySlot(`portcullis:bucket:v2:{all:${prefix}${i}}`)) === shard)
          return `all:${prefix}${i}`;
    };
  })
  .extend(
    'withStore',
    { scope: 'file' },
    ({ redisCluster, userOnShard }) =>
      async (
        options: Omit<RedisStoreOptions, 'cluster'>,
        body: (store: RedisBucketStore) => Promise<void>,
      ): Promise<void> => {
        const store = new RedisBucketStore({
          cluster: { nodes: redisCluster.seeds },
          commandTimeoutMs: 5000,
          ...options,
        });
        await store.ready();
        try {
          // Every shard has run the script once, so the calls counted below are EVALSHA only.
          await Promise.all(
            [0, 1, 2].map((shard) =>
              takeOne(store, userOnShard(shard, 'warm'), {
                replenishRate: 1,
                burstCapacity: 1,
                requestedTokens: 0,
              }),
            ),
          );
          await body(store);
        } finally {
          await store.close();
        }
      },
  );

describe('batches per slot on a three-shard Redis Cluster', () => {
  it('computes the slot Redis does (CLUSTER KEYSLOT), hash tags, empty tags and non-ASCII keys included', async ({
    redisClusterNodes: nodes,
  }) => {
    const fixed = [
      'portcullis:bucket:{all:u1}',
      'portcullis:bucket:v2:{all:u1}',
      'portcullis:bucket:{all:api:u1}:3',
      'portcullis:bucket:v2:{all:api:u1}:3',
      '{}',
      'a{}{b}',
      'a{b}{c}',
      '{',
      '}{a}',
      'ünïcødé',
      'p:{用户}:1',
      '',
    ];
    const random = fc.sample(
      fc.string({
        unit: fc.constantFrom('a', 'Z', '0', ':', '{', '}', 'é', '用', '😀'),
        maxLength: 12,
      }),
      400,
    );
    const keys = [...fixed, ...random];
    const admin = nodes[0] as Redis;
    const slots = await Promise.all(keys.map((k) => admin.call('CLUSTER', 'KEYSLOT', k)));
    expect(keys.map(keySlot)).toEqual(slots.map(Number));
    // The versioned key layout (v2: string buckets) keeps the hash tag, so every bucket's slot.
    expect(keySlot('portcullis:bucket:v2:{all:u1}')).toBe(keySlot('portcullis:bucket:{all:u1}'));
  });

  it('one script call per slot of a turn, on the shard owning it, with the decisions of separate calls in arrival order', async ({
    redisClusterNodes: nodes,
    slotOwner: owner,
    withStore,
    userOnShard,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 2, requestedTokens: 1 };
    await withStore({}, async (store) => {
      for (let turn = 0; turn < 4; turn++) {
        // New buckets each turn: twelve users on every shard, and three more sharing one slot
        // (three buckets, one call). Each call runs at one Redis time on buckets that start
        // full, so the decisions do not depend on the shards' clocks.
        const users = [
          ...[0, 1, 2].flatMap((shard) =>
            Array.from({ length: 4 }, (_, i) => userOnShard(shard, `turn-${turn}-${i}-`)),
          ),
          ...usersSharingASlot(3, `same-slot-${turn}-`).map((u) => `all:${u}`),
        ];
        // Each user three times, interleaved: 45 takes, the third of each refused.
        const order = Array.from(
          { length: 45 },
          (_, i) => users[(i * 7 + turn) % users.length] as string,
        );
        const before = await Promise.all(nodes.map((n) => scriptCalls(n)));
        const got = await Promise.all(order.map((u) => takeOne(store, u, rule)));
        const after = await Promise.all(nodes.map((n) => scriptCalls(n)));
        const slotsPerShard = [0, 0, 0];
        for (const slot of new Set(order.map((u) => keySlot(store.keyOf(u)))))
          slotsPerShard[owner.get(slot) as number]! += 1;
        expect(after.map((n, i) => n - (before[i] as number))).toEqual(slotsPerShard);
        expect(slotsPerShard.reduce((a, b) => a + b)).toBe(13); // 12 users with a slot each, 3 in one
        const states = new Map<string, BucketState | undefined>();
        order.forEach((u, i) => {
          const pure = takeAllUs([states.get(u)], [rule], 1_795_000_000_000_000, [1]);
          if (pure.decision.allowed) states.set(u, pure.states[0]);
          expect(got[i]).toEqual(pure.decision);
        });
        // Every bucket was pushed past its limit, so the order within each call really mattered.
        expect(got.filter((d) => !d.allowed).length).toBe(users.length);
      }
    });
  });

  it('a turn larger than maxBatch is split and still admits exactly the burst of one bucket', async ({
    redisClusterNodes: nodes,
    withStore,
    userOnShard,
  }) => {
    const rule: BucketRule = { replenishRate: 1, burstCapacity: 50, requestedTokens: 1 };
    await withStore({ maxBatch: 16 }, async (store) => {
      const user = userOnShard(1, 'split-');
      const before = await Promise.all(nodes.map((n) => scriptCalls(n)));
      const decisions = await Promise.all(
        Array.from({ length: 80 }, () => takeOne(store, user, rule)),
      );
      const after = await Promise.all(nodes.map((n) => scriptCalls(n)));
      expect(after.map((n, i) => n - (before[i] as number))).toEqual([0, 5, 0]);
      expect(decisions.filter((d) => d.allowed).length).toBe(50);
    });
  });

  it('regression: takes of one turn on different shards all get decisions (they once shared one auto-pipeline routed by the key count and all failed), also with maxBatch 1', async ({
    redisClusterNodes: nodes,
    withStore,
    userOnShard,
  }) => {
    const rule: BucketRule = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };
    for (const maxBatch of [1, 128]) {
      await withStore({ maxBatch }, async (store) => {
        const users = [0, 1, 2].flatMap((shard) =>
          Array.from({ length: 4 }, (_, i) => userOnShard(shard, `spread-${maxBatch}-${i}-`)),
        );
        const before = await Promise.all(nodes.map((n) => scriptCalls(n)));
        const decisions = await Promise.all(users.map((u) => takeOne(store, u, rule)));
        const after = await Promise.all(nodes.map((n) => scriptCalls(n)));
        expect(decisions.every((d) => d.allowed)).toBe(true);
        expect(after.map((n, i) => n - (before[i] as number))).toEqual([4, 4, 4]);
      });
    }
  });

  it('Lua on the cluster equals the pure function: random turns of single and multi-limit takes over users on every shard', async ({
    redisCluster: redis,
    redisClusterClient: cluster,
    userOnShard,
  }) => {
    // The script as the store calls it, one call per slot of a turn, at the test's clock.
    const client = new Cluster(redis.seeds);
    const keyOf = (user: string, i = 0) => (i === 0 ? `eq:{${user}}` : `eq:{${user}}:${i}`);
    let run = 0;
    const limitArb = fc.record({
      replenishRate: fc.integer({ min: 1, max: 500 }),
      burstCapacity: fc.integer({ min: 1, max: 500 }),
    });
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(limitArb, { minLength: 1, maxLength: 4 }), {
            minLength: 6,
            maxLength: 6,
          }),
          fc.array(
            fc.tuple(
              fc.integer({ min: -50_000, max: 3_000_000 }),
              fc.array(fc.tuple(fc.nat({ max: 5 }), fc.nat()), { minLength: 1, maxLength: 12 }),
            ),
            { minLength: 1, maxLength: 15 },
          ),
          async (limitsPerUser, turns) => {
            run++;
            // Six users, two per shard, each with its own rule of 1..4 limits.
            const users = [0, 1, 2].flatMap((shard) => [
              userOnShard(shard, `eq-${run}-a-`),
              userOnShard(shard, `eq-${run}-b-`),
            ]);
            const rules = limitsPerUser.map((limits) =>
              limits.map((l): BucketRule => ({ ...l, requestedTokens: 1 })),
            );
            const states: (readonly (BucketState | undefined)[])[] = rules.map((r) =>
              r.map(() => undefined),
            );
            // A realistic epoch in µs (16 digits), so large-number formatting is exercised too.
            let nowUs = 1_795_000_000_000_000 + run * 10_000_000;
            for (const [gapUs, takes] of turns) {
              nowUs += gapUs; // negative gaps: a clock going backwards
              const costsOf = (u: number, c: number) =>
                (rules[u] as BucketRule[]).map((r) => c % (r.burstCapacity + 1));
              // The turn's takes grouped per slot, arrival order kept in each group, as the store does.
              const bySlot = new Map<number, number[]>();
              takes.forEach(([u], i) => {
                const slot = keySlot(keyOf(users[u] as string));
                bySlot.set(slot, [...(bySlot.get(slot) ?? []), i]);
              });
              const scriptTake = ([u, c]: [number, number]) => ({
                key: keyOf(users[u] as string),
                rules: rules[u] as BucketRule[],
                costs: costsOf(u, c),
              });
              const got: RawTake[] = [];
              await Promise.all(
                [...bySlot.values()].map(async (group) => {
                  const answers = await runTakes(
                    client,
                    group.map((i) => scriptTake(takes[i] as [number, number])),
                    nowUs,
                  );
                  group.forEach((i, j) => (got[i] = answers[j] as RawTake));
                }),
              );
              takes.forEach(([u, c], i) => {
                const pure = takeAllUs(
                  states[u] as (BucketState | undefined)[],
                  rules[u] as BucketRule[],
                  nowUs,
                  costsOf(u, c),
                );
                if (pure.decision.allowed) states[u] = pure.states;
                expect(got[i]?.decision).toEqual(pure.decision);
                expect(got[i]?.tokens).toEqual(pure.states.map((st) => st.microTokens));
              });
            }
            for (const [u, user] of users.entries()) {
              for (const [i, state] of (states[u] as (BucketState | undefined)[]).entries()) {
                expect(decodeBucketValue(await cluster.getBuffer(keyOf(user, i)))).toEqual(state);
              }
            }
          },
        ),
        { numRuns: 30 },
      );
    } finally {
      client.disconnect();
    }
  });
});

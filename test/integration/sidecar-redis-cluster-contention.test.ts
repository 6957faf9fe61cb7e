// Exactness under contention on a three-shard Redis Cluster. Three sidecar processes share the
// cluster; 60 connections hammer 24 users for over 5 s. The users' buckets lie on every shard, and
// eight slots hold three users each, so a turn's takes of different users batch into one call.
// For every user, admitted requests never exceed the token-bucket bound for the time Redis spent
// deciding that user (first to last admitted take), and fall short of it by at most one plus what
// the full bucket could not hold before the load began; the shards ran fewer script calls than
// there were decisions (batches formed).
import { performance } from 'node:perf_hooks';
import type { Cluster, Redis } from 'ioredis';
import { Pool } from 'undici';
import { describe, expect } from 'vitest';
import type { BucketRule } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { keySlot } from '../../lib/token-bucket/key-slot.ts';
import { test } from '../harness/fixtures.ts';
import { scriptCalls } from '../harness/redis.ts';

const rule: BucketRule = { replenishRate: 10, burstCapacity: 10, requestedTokens: 1 };
const bucketKey = (user: string) => `portcullis:bucket:v2:{all:${user}}`;
/** µs time of a user's last admitted take, stored with its bucket. */
const stateTimeUs = async (cluster: Cluster, user: string) =>
  decodeBucketValue(await cluster.getBuffer(bucketKey(user)))?.updatedUs ?? Number.NaN;

/** `perSlot` users in each of `slots` slots; the slots chosen so that every shard holds some. */
function users(slots: number, perSlot: number, owner: (slot: number) => number): string[] {
  const bySlot = new Map<number, string[]>();
  const chosen: string[][] = [];
  for (let i = 0; chosen.length < slots; i++) {
    const user = `user-${i}`;
    const slot = keySlot(bucketKey(user));
    const same = bySlot.get(slot) ?? [];
    same.push(user);
    bySlot.set(slot, same);
    // Round-robin over the shards, so each gets a third of the slots.
    if (same.length === perSlot && owner(slot) === chosen.length % 3) chosen.push(same);
  }
  return chosen.flat();
}

const it = test.extend('sidecars', { scope: 'file' }, ({ start, userService, redisCluster }) =>
  start.sidecars(3, {
    upstream: { url: userService.url },
    route: { id: 'all' },
    // Deny and a long timeout, as in sidecar-contention.test.ts: this test is about exactness.
    limiter: { ...rule, onStoreError: 'deny' },
    redis: { cluster: { nodes: redisCluster.seeds }, commandTimeoutMs: 5000 },
  }),
);

describe('three sidecars, a three-shard Redis Cluster, 24 users, 60 connections', () => {
  it('every user: admitted <= bound and >= bound - 1 (less the tokens a full bucket lost before the load); batches formed on every shard', async ({
    sidecars,
    redisClusterClient: cluster,
    redisClusterNodes: nodes,
    slotOwner: owner,
  }) => {
    const all = users(8, 3, (slot) => owner.get(slot) as number);
    expect(new Set(all.map((u) => owner.get(keySlot(bucketKey(u))))).size).toBe(3);
    const pools = sidecars.map((s) => new Pool(s.url, { connections: 20 }));
    const hit = async (pool: Pool, key: string) => {
      const res = await pool.request({
        method: 'GET',
        path: '/healthcheck/ready',
        headers: { 'user-id': key },
      });
      await res.body.dump();
      return res.statusCode;
    };
    // Open every connection on another key, then one request per user alone: it starts the bucket
    // and tells us Redis' time of the user's first decision.
    await Promise.all(pools.flatMap((p) => Array.from({ length: 20 }, () => hit(p, 'warm'))));
    for (const u of all) expect(await hit(pools[0] as Pool, u)).toBe(200);
    const firstUs = await Promise.all(all.map((u) => stateTimeUs(cluster, u)));
    const admitted = new Map(all.map((u) => [u, 1]));
    const other: number[] = [];
    let limited = 0;
    const callsBefore = await Promise.all(nodes.map((n) => scriptCalls(n)));
    // Redis time as the load begins: a bucket left full since its first take overflowed until then
    // (a slow machine takes longer over the 24 lone requests), and those tokens were never there
    // to take.
    const [sec, usec] = await (nodes[0] as Redis).time();
    const loadStartUs = Number(sec) * 1e6 + Number(usec);
    const until = performance.now() + 5500;
    let n = 0;
    await Promise.all(
      pools.flatMap((pool) =>
        Array.from({ length: 20 }, async () => {
          while (performance.now() < until) {
            const u = all[n++ % all.length] as string;
            const status = await hit(pool, u);
            if (status === 200) admitted.set(u, (admitted.get(u) as number) + 1);
            else if (status === 429) limited++;
            else other.push(status);
          }
        }),
      ),
    );
    await Promise.all(pools.map((p) => p.close()));
    const calls = (await Promise.all(nodes.map((n) => scriptCalls(n)))).map(
      (c, i) => c - (callsBefore[i] as number),
    );
    const lastUs = await Promise.all(all.map((u) => stateTimeUs(cluster, u)));

    expect(other).toEqual([]);
    expect(limited).toBeGreaterThan(0);
    for (const [i, u] of all.entries()) {
      const spanUs = (lastUs[i] as number) - (firstUs[i] as number);
      expect(spanUs, u).toBeGreaterThanOrEqual(5_000_000);
      // Tokens available between the user's first and last admitting decision.
      const bound = Math.floor(
        (rule.burstCapacity * 1e6 + rule.replenishRate * spanUs) / 1e6 / rule.requestedTokens,
      );
      expect(admitted.get(u), u).toBeLessThanOrEqual(bound);
      const overflowTokens = Math.max(
        0,
        (rule.replenishRate * (loadStartUs - (firstUs[i] as number))) / 1e6 - rule.requestedTokens,
      );
      expect(admitted.get(u), u).toBeGreaterThanOrEqual(
        bound - 1 - Math.ceil(overflowTokens / rule.requestedTokens),
      );
    }
    // Every shard decided, in fewer calls than decisions: takes of one slot shared calls.
    const decisions = [...admitted.values()].reduce((a, b) => a + b) - all.length + limited;
    const total = calls.reduce((a, b) => a + b);
    for (const c of calls) expect(c).toBeGreaterThan(0);
    expect(total).toBeLessThan(decisions);
    console.log(
      `cluster contention: ${decisions} decisions in ${total} script calls (${calls.join(' / ')} per shard)`,
    );
  });
});

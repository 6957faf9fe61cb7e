// The Redis store on a real Redis Cluster (three redis-server masters on loopback): the hash-tagged
// bucket key lives in one slot, the one Lua script runs there, and a sidecar configured with
// `redis.cluster` limits exactly as on a single node.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { takeUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { RedisBucketStore } from '../../lib/token-bucket/redis-store.ts';
import { runTakes } from '../../lib/token-bucket/take-script.ts';
import { test } from '../harness/fixtures.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

const rule: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };

const it = test.extend('sidecar', { scope: 'file' }, ({ start, userService, redisCluster }) =>
  start.sidecar({
    upstream: { url: userService.url },
    route: { id: 'all' },
    limiter: { ...rule },
    redis: { cluster: { nodes: redisCluster.seeds }, commandTimeoutMs: 2000 },
  }),
);

describe('Redis Cluster', () => {
  it("the store gives the pure function's decisions, with the key in one slot and a TTL", async ({
    redisCluster,
    redisClusterClient: cluster,
  }) => {
    const store = new RedisBucketStore({
      cluster: { nodes: redisCluster.seeds },
      commandTimeoutMs: 2000,
    });
    await store.ready();
    try {
      let state: BucketState | undefined;
      const key = store.keyOf('all:cluster-direct');
      // The script through the store's own Cluster client, with the time Redis used in its reply.
      for (let i = 0; i < 12; i++) {
        const [lua] = await runTakes(store.client, [{ key, rules: [rule], costs: [2] }]);
        const pure = takeUs(state, rule, lua?.nowUs ?? Number.NaN, 2);
        if (pure.decision.allowed) state = pure.state;
        expect(lua?.decision).toEqual(pure.decision);
      }
      // Twelve takes of 2 from a burst of 10 in well under the 2 s a refill of 2 needs: empty.
      expect((await takeOne(store, 'all:cluster-direct', rule)).allowed).toBe(false);
      expect(key).toBe('portcullis:bucket:v2:{all:cluster-direct}');
      expect(await cluster.pttl(key)).toBeGreaterThan(0);
    } finally {
      await store.close();
    }
  });

  it('a sidecar on the cluster limits exactly: 5 of a burst of 7 (10 tokens, 2 each)', async ({
    sidecar,
    redisClusterClient: cluster,
  }) => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await request(`${sidecar.url}/healthcheck/ready`, {
        headers: { 'USER-ID': 'cluster-user' },
      });
      await res.body.dump();
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(await cluster.exists('portcullis:bucket:v2:{all:cluster-user}')).toBe(1);
  });
});

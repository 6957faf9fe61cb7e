// Accuracy at a deployed policy: three sidecar processes on one redis-server, 100 requests/s with a
// burst of 100 for one user, 60 connections hammering that user for 5 s. Over the span Redis spent
// deciding (its own times of the first and the last admitted take), the sidecars together admit no
// more than the token bucket allows (burst + rate x span) and reach it: over-admission 0, and the
// limit is not stricter than configured either. (sidecar-contention.test.ts holds the same at a
// small burst, with local refusals and two limits per rule.)
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { describe, expect } from 'vitest';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { test } from '../harness/fixtures.ts';

const policy = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };
const user = 'accuracy-user';
const bucketKey = `portcullis:bucket:v2:{acc:${user}}`;

const it = test.extend('sidecars', { scope: 'file' }, ({ start, userService, redis }) =>
  start.sidecars(3, {
    upstream: { url: userService.url },
    route: { id: 'acc' },
    limiter: { ...policy, onStoreError: 'deny' },
    // A long timeout: a timed-out command that still ran would take a token nobody counted.
    redis: { url: redis.url, commandTimeoutMs: 5000 },
  }),
);

describe('three sidecars at 100/s burst 100, one user, 60 connections for 5 s', () => {
  it('never admit past the token bucket bound: over-admission 0', async ({
    sidecars,
    redisAdmin,
  }) => {
    const pools = sidecars.map((s) => new Pool(s.url, { connections: 20 }));
    const send = async (pool: Pool, id: string) => {
      const res = await pool.request({
        method: 'GET',
        path: '/healthcheck/ready',
        headers: { 'user-id': id },
      });
      await res.body.dump();
      return res.statusCode;
    };
    const storedUs = async () =>
      decodeBucketValue(await redisAdmin.getBuffer(bucketKey))?.updatedUs ?? Number.NaN;
    try {
      // Every connection open first (another user), then one request alone starts the bucket.
      await Promise.all(pools.flatMap((p) => Array.from({ length: 20 }, () => send(p, 'warm-up'))));
      expect(await send(pools[0] as Pool, user)).toBe(200);
      const firstUs = await storedUs();
      const statuses = new Map<number, number>();
      const until = performance.now() + 5000;
      await Promise.all(
        pools.flatMap((pool) =>
          Array.from({ length: 20 }, async () => {
            while (performance.now() < until) {
              const status = await send(pool, user);
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }
          }),
        ),
      );
      const spanUs = (await storedUs()) - firstUs;
      const admitted = 1 + (statuses.get(200) ?? 0);
      const bound = Math.floor(policy.burstCapacity + (policy.replenishRate * spanUs) / 1e6);

      expect([...statuses.keys()].sort()).toEqual([200, 429]);
      expect(spanUs).toBeGreaterThanOrEqual(4_000_000);
      expect(admitted - bound).toBeLessThanOrEqual(0);
      expect(admitted).toBeGreaterThan(bound / 2);
    } finally {
      await Promise.all(pools.map((p) => p.close()));
    }
  });
});

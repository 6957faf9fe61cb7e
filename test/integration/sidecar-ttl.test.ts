// Every bucket key carries a TTL at all times, and an idle bucket's key is gone
// after its TTL (refill-from-empty time x 2, at least 1 s).
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { describe, expect } from 'vitest';
import { bucketTtlMs } from '../../lib/token-bucket/bucket.ts';
import { test } from '../harness/fixtures.ts';
import { sleep } from './sidecar-support.ts';

// Refill from empty takes 10 / 50 = 0.2 s, so the TTL is the 1 s floor: the test stays short.
const limiter = { replenishRate: 50, burstCapacity: 10, requestedTokens: 1 };

const it = test.extend('sidecar', { scope: 'file' }, ({ start, userService, redis }) =>
  start.sidecar({
    upstream: { url: userService.url },
    route: { id: 'ttl' },
    limiter,
    redis: { url: redis.url, commandTimeoutMs: 2000 },
  }),
);

describe('bucket keys always expire', () => {
  it('PTTL is set on every key during traffic, and idle keys vanish after the TTL', async ({
    sidecar,
    redisAdmin: admin,
  }) => {
    const ttl = bucketTtlMs({ ...limiter });
    expect(ttl).toBe(1000);
    const pool = new Pool(sidecar.url, { connections: 8 });
    const users = Array.from({ length: 8 }, (_, i) => `ttl-user-${i}`);
    let running = true;
    const load = Promise.all(
      users.map(async (u) => {
        while (running) {
          const res = await pool.request({
            method: 'GET',
            path: '/healthcheck/ready',
            headers: { 'user-id': u },
          });
          await res.body.dump();
        }
      }),
    );
    // Sample every key's PTTL while the traffic runs: never -1 (no TTL), never above the TTL.
    const seen = new Set<string>();
    const until = performance.now() + 2000;
    let samples = 0;
    while (performance.now() < until) {
      const keys = await admin.keys('portcullis:bucket:*');
      for (const k of keys) {
        const pttl = await admin.pttl(k);
        if (pttl === -2) continue; // expired between KEYS and PTTL
        seen.add(k);
        samples++;
        expect(pttl).toBeGreaterThan(0);
        expect(pttl).toBeLessThanOrEqual(ttl);
      }
    }
    running = false;
    await load;
    await pool.close();
    expect(seen.size).toBe(users.length);
    expect(samples).toBeGreaterThan(50);

    // Idle now: after the TTL every key is gone.
    await sleep(ttl + 200);
    expect(await admin.keys('portcullis:bucket:*')).toEqual([]);
  });

  it('the specification scenario limits get a 20 s TTL (10 s to refill from empty, x2)', async () => {
    expect(bucketTtlMs({ replenishRate: 1, burstCapacity: 10, requestedTokens: 2 })).toBe(20_000);
  });
});

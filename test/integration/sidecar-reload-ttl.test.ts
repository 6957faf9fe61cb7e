// Exact across reloads. A hot reload that makes a rule refill more slowly (a lower rate, or a
// larger burst at the same rate) keeps each bucket's state, so a drained bucket must not read as
// full when its key's old TTL (twice the old refill time) runs out: the reload re-derives the TTL
// of the stored keys. Real sidecar, real Redis; the bound is computed from the state Redis stored
// after the drain and Redis' own time after the last request.
import type { Redis } from 'ioredis';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { hashBucketKey, keyHashSecretOf } from '../../lib/token-bucket/key-hash.ts';
import { test } from '../harness/fixtures.ts';
import type { RunningSidecar } from '../harness/programs.ts';
import { sleep } from './sidecar-support.ts';

const before = { replenishRate: 10, burstCapacity: 10 };

async function redisNowUs(admin: Redis): Promise<number> {
  const [s, us] = await admin.time();
  return Number(s) * 1e6 + Number(us);
}

async function status(sidecar: RunningSidecar, user: string): Promise<number> {
  const res = await request(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': user } });
  await res.body.dump();
  return res.statusCode;
}

/**
 * Drains `user`'s bucket under the old limits, reloads `after`, waits past the old key's TTL,
 * then sends `burst` requests at once. Returns how many were admitted, the exact bound (the tokens
 * by the last decision) and the least (the tokens when the requests were sent).
 */
async function drainReloadBurst(
  sidecar: RunningSidecar,
  admin: Redis,
  routeId: string,
  after: { replenishRate: number; burstCapacity: number },
  burst: number,
  hashed = false,
) {
  const user = 'reloaded';
  // redis.hashKeys: the hash tag is the take key's HMAC, keyed from the (here empty) Redis password.
  const key = `portcullis:bucket:v2:{${hashed ? hashBucketKey(keyHashSecretOf(''), `${routeId}:${user}`) : `${routeId}:${user}`}}`;
  while ((await status(sidecar, user)) === 200) {
    // Drain until the first refusal.
  }
  const drained = decodeBucketValue(await admin.getBuffer(key));
  expect(drained).toBeDefined();
  const { microTokens, updatedUs } = drained ?? { microTokens: 0, updatedUs: 0 };
  sidecar.write({ ...sidecar.config, limiter: { ...after } });
  await sidecar.program.waitForLine(/config reloaded/, 10_000);
  // Past the old TTL (2 s: twice the old refill time of 1 s), with room to spare.
  const oldTtlUs = 2_000_000;
  while ((await redisNowUs(admin)) < updatedUs + oldTtlUs + 300_000) await sleep(50);
  const startUs = await redisNowUs(admin);
  const statuses = await Promise.all(Array.from({ length: burst }, () => status(sidecar, user)));
  const endUs = await redisNowUs(admin);
  // The exact bucket: the drained state refilled at the new rate up to the last decision at the latest.
  const tokensAt = (us: number) =>
    Math.min(
      after.burstCapacity,
      Math.floor((microTokens + after.replenishRate * (us - updatedUs)) / 1e6),
    );
  // More requests than tokens: whatever the bucket held when they were sent is taken.
  return {
    admitted: statuses.filter((s) => s === 200).length,
    other: statuses.filter((s) => s !== 200 && s !== 429),
    bound: tokensAt(endUs),
    least: tokensAt(startUs),
  };
}

const it = test
  .extend('lowerRate', { scope: 'file' }, ({ start, userService, redis }) =>
    start.sidecar(
      {
        upstream: { url: userService.url },
        route: { id: 'lower-rate' },
        limiter: { ...before },
        redis: { url: redis.url },
      },
      { name: 'sidecar-lower-rate' },
    ),
  )
  .extend('largerBurst', { scope: 'file' }, ({ start, userService, redis }) =>
    start.sidecar(
      {
        upstream: { url: userService.url },
        route: { id: 'larger-burst' },
        limiter: { ...before },
        redis: { url: redis.url },
      },
      { name: 'sidecar-larger-burst' },
    ),
  )
  .extend('hashedKeys', { scope: 'file' }, ({ start, userService, redis }) =>
    start.sidecar(
      {
        upstream: { url: userService.url },
        route: { id: 'hashed' },
        limiter: { ...before },
        redis: { url: redis.url, hashKeys: true },
      },
      { name: 'sidecar-hashed-keys' },
    ),
  );

describe('a reload that refills more slowly keeps drained buckets drained', () => {
  it('a lower rate: a drained bucket is not full once its old TTL has passed', async ({
    lowerRate,
    redisAdmin,
  }) => {
    const { admitted, other, bound, least } = await drainReloadBurst(
      lowerRate,
      redisAdmin,
      'lower-rate',
      { replenishRate: 2, burstCapacity: 10 },
      10,
    );
    expect(other).toEqual([]);
    expect(bound).toBeLessThan(10);
    expect(admitted, `admitted (exact bound ${bound})`).toBeLessThanOrEqual(bound);
    expect(admitted).toBeGreaterThanOrEqual(least);
  });

  it('a larger burst: a drained bucket is not full once its old TTL has passed', async ({
    largerBurst,
    redisAdmin,
  }) => {
    const { admitted, other, bound, least } = await drainReloadBurst(
      largerBurst,
      redisAdmin,
      'larger-burst',
      { replenishRate: 10, burstCapacity: 100 },
      100,
    );
    expect(other).toEqual([]);
    expect(bound).toBeLessThan(100);
    expect(admitted, `admitted (exact bound ${bound})`).toBeLessThanOrEqual(bound);
    expect(admitted).toBeGreaterThanOrEqual(least);
  });

  it('with hashed keys (as the operator renders routes): a lower rate keeps a drained bucket drained', async ({
    hashedKeys,
    redisAdmin,
  }) => {
    const { admitted, other, bound, least } = await drainReloadBurst(
      hashedKeys,
      redisAdmin,
      'hashed',
      { replenishRate: 2, burstCapacity: 10 },
      10,
      true,
    );
    expect(other).toEqual([]);
    expect(bound).toBeLessThan(10);
    expect(admitted, `admitted (exact bound ${bound})`).toBeLessThanOrEqual(bound);
    expect(admitted).toBeGreaterThanOrEqual(least);
  });
});

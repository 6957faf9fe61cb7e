// Isolation. Two USER-IDs never affect each other; two routes (two sidecars with
// different route ids on one Redis) never share a bucket.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';

const limiter = { replenishRate: 1, burstCapacity: 4, requestedTokens: 2 };

async function burst(url: string, userId: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await request(`${url}/healthcheck/ready`, { headers: { 'USER-ID': userId } });
    await res.body.dump();
    statuses.push(res.statusCode);
  }
  return statuses;
}

const it = test
  .extend('common', { scope: 'file' }, ({ userService, redis }) => ({
    upstream: { url: userService.url },
    limiter,
    redis: { url: redis.url, commandTimeoutMs: 2000 },
  }))
  .extend('routeA', { scope: 'file' }, ({ start, common }) =>
    start.sidecar({ ...common, route: { id: 'route-a' } }, { name: 'sidecar-a' }),
  )
  .extend('routeB', { scope: 'file' }, ({ start, common }) =>
    start.sidecar({ ...common, route: { id: 'route-b' } }, { name: 'sidecar-b' }),
  );

describe('bucket isolation', () => {
  it('two USER-IDs: exhausting one leaves the other untouched', async ({
    routeA,
    redisAdmin: admin,
  }) => {
    expect(await burst(routeA.url, 'alice', 3)).toEqual([200, 200, 429]);
    const aliceBefore = await admin.getBuffer('portcullis:bucket:v2:{route-a:alice}');
    expect(aliceBefore).not.toBeNull();
    // bob has his own full bucket ...
    expect(await burst(routeA.url, 'bob', 3)).toEqual([200, 200, 429]);
    // ... and using it did not touch alice's state.
    expect(await admin.getBuffer('portcullis:bucket:v2:{route-a:alice}')).toEqual(aliceBefore);
  });

  it('two routes: the same USER-ID has one bucket per route', async ({
    routeA,
    routeB,
    redisAdmin: admin,
  }) => {
    expect(await burst(routeA.url, 'carol', 3)).toEqual([200, 200, 429]);
    expect(await burst(routeB.url, 'carol', 3)).toEqual([200, 200, 429]);
    const keys = (await admin.keys('portcullis:bucket:*carol*')).sort();
    expect(keys).toEqual([
      'portcullis:bucket:v2:{route-a:carol}',
      'portcullis:bucket:v2:{route-b:carol}',
    ]);
  });
});

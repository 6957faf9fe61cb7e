// Issue 2 test 4: isolation. Two USER-IDs never affect each other; two routes (two sidecars with
// different route ids on one Redis) never share a bucket.
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.ts';
import { startSidecar, startUserService, type RunningSidecar } from './sidecar-support.ts';

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

describe('bucket isolation', () => {
  let redis: RedisServer;
  let admin: Redis;
  let user: Awaited<ReturnType<typeof startUserService>>;
  let routeA: RunningSidecar;
  let routeB: RunningSidecar;

  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
    user = await startUserService();
    const common = { upstream: { url: user.url }, limiter, redis: { url: redis.url, commandTimeoutMs: 2000 } };
    routeA = await startSidecar({ ...common, name: 'sidecar-a', route: { id: 'route-a' } });
    routeB = await startSidecar({ ...common, name: 'sidecar-b', route: { id: 'route-b' } });
  });
  afterAll(async () => {
    await routeA?.program.stop();
    await routeB?.program.stop();
    await user?.program.stop();
    admin?.disconnect();
    await redis?.stop();
  });

  it('two USER-IDs: exhausting one leaves the other untouched', async () => {
    expect(await burst(routeA.url, 'alice', 3)).toEqual([200, 200, 429]);
    const aliceBefore = await admin.getBuffer('portcullis:bucket:v2:{route-a:alice}');
    expect(aliceBefore).not.toBeNull();
    // bob has his own full bucket ...
    expect(await burst(routeA.url, 'bob', 3)).toEqual([200, 200, 429]);
    // ... and using it did not touch alice's state.
    expect(await admin.getBuffer('portcullis:bucket:v2:{route-a:alice}')).toEqual(aliceBefore);
  });

  it('two routes: the same USER-ID has one bucket per route', async () => {
    expect(await burst(routeA.url, 'carol', 3)).toEqual([200, 200, 429]);
    expect(await burst(routeB.url, 'carol', 3)).toEqual([200, 200, 429]);
    const keys = (await admin.keys('portcullis:bucket:*carol*')).sort();
    expect(keys).toEqual(['portcullis:bucket:v2:{route-a:carol}', 'portcullis:bucket:v2:{route-b:carol}']);
  });
});

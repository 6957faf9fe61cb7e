// Same-named routes of two namespaces on one Redis, each sidecar run from the config the operator
// renders for its route. Before, bucket keys were `route + user` whatever the namespace: a team
// naming its route like another team's shared, drained or refilled that team's buckets, and every
// user id or API key stood in Redis as it was.
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { rateLimitRouteSchema } from '../../operator/api/index.ts';
import { createTenantRedisUsers } from '../../operator/redis/tenant-redis-users.ts';
import { sidecarConfigFor } from '../../operator/resources/route/config-map.ts';
import { defaultResourceSettings } from '../../operator/resources/shared/settings.ts';
import { perDescribe, type Starter } from '../harness/fixtures.ts';

/** The sidecar config the operator renders for route `api` in `namespace` (its Redis: `redisUrl`), on the test's upstream. */
function renderedFor(
  namespace: string,
  burstCapacity: number,
  redisUrl: string,
  upstream: string,
): SidecarConfigInput {
  const route = rateLimitRouteSchema.parse({
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name: 'api', namespace, uid: `uid-${namespace}`, generation: 1 },
    spec: {
      upstream: { service: { name: 'users', port: 80 } },
      path: '/**',
      limiter: { replenishRate: 1, burstCapacity, requestedTokens: 1 },
    },
  });
  const rendered = sidecarConfigFor(route, {
    ...defaultResourceSettings,
    defaultRedisUrl: 'redis://placeholder:6379',
  });
  return {
    upstream: { url: upstream },
    route: rendered.route,
    limiter: rendered.limiter,
    redis: { ...rendered.redis, url: redisUrl },
  };
}

async function twoTeams(
  start: Starter,
  urls: (redisUrl: string) => Promise<Record<'team-a' | 'team-b', string>>,
) {
  const redis = await start.redis(['--requirepass', 'admin-Pw7r3Xc9Ln2Hd5Qs'], {
    password: 'admin-Pw7r3Xc9Ln2Hd5Qs',
  });
  const user = await start.userService();
  const url = await urls(redis.url);
  // team-b's route holds 10,000,000 tokens: before, one request of its refilled team-a's bucket.
  const victim = await start.sidecar(renderedFor('team-a', 3, url['team-a'], user.url), {
    name: 'sidecar-team-a',
  });
  const attacker = await start.sidecar(renderedFor('team-b', 10_000_000, url['team-b'], user.url), {
    name: 'sidecar-team-b',
  });
  const send = async (s: { url: string }, key = 'u1') =>
    (await request(`${s.url}/healthcheck/ready`, { headers: { 'user-id': key } })).statusCode;
  return {
    victim: (key?: string) => send(victim, key),
    attacker: () => send(attacker),
    admin: start.redisClient(redis.url),
  };
}

describe.each([
  [
    'the admin URL (no ACL users)',
    async (redisUrl: string) => ({ 'team-a': redisUrl, 'team-b': redisUrl }),
  ],
  [
    "each namespace's own ACL user",
    async (redisUrl: string) => {
      const users = createTenantRedisUsers();
      const a = (await users.grant(redisUrl, 'team-a', 'bucket')) as string;
      const b = (await users.grant(redisUrl, 'team-b', 'bucket')) as string;
      await users.close();
      return { 'team-a': a, 'team-b': b };
    },
  ],
] as const)('same-named routes in two namespaces, on %s', (_, urls) => {
  const s = perDescribe((start) => twoTeams(start, urls));

  it("keep separate buckets: one team's requests neither drain nor refill the other's", async () => {
    expect([await s.victim(), await s.victim(), await s.victim(), await s.victim()]).toEqual([
      200, 200, 200, 429,
    ]);
    // The attacker's route, same name, same user id, a huge bucket: its own, and team-a's stays empty.
    expect(await s.attacker()).toBe(200);
    expect(await s.victim()).toBe(429);
    // And team-a's empty bucket never throttled team-b.
    expect([await s.attacker(), await s.attacker()]).toEqual([200, 200]);
  });

  it('stores no client key: bucket keys hold an HMAC of route, rule and key under the namespace prefix', async () => {
    const apiKey = 'sk-live-4f9a2c7e1b';
    expect(await s.victim(apiKey)).toBe(200);
    const keys = await s.admin.keys('*');
    expect(keys.filter((k) => k.includes(apiKey))).toEqual([]);
    expect(keys.length).toBe(3);
    for (const k of keys)
      expect(k).toMatch(/^portcullis:bucket:team-[ab]:v2:\{[A-Za-z0-9_-]{22}\}$/);
  });
});

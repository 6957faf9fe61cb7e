// Rules per path and method, several limits on one rule, shadow mode and unmatched requests, on
// real sidecar processes in front of the real user service, with the memory store and with a real
// Redis (the Lua script). Hot reload keeps the buckets of rules whose names stay.
import { Redis } from 'ioredis';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { perDescribe } from '../harness/fixtures.ts';

type Limiter = SidecarConfigInput['limiter'];

// Slow refill (1 token per 100 s) so nothing comes back while a test runs.
const slow = (burstCapacity: number, requestedTokens = 1) => ({
  replenishRate: 1,
  burstCapacity: burstCapacity * 100,
  requestedTokens: requestedTokens * 100,
});

const limiter: Limiter = {
  rules: [
    { name: 'search', path: '/api/search/**', methods: ['GET', 'POST'], limits: [slow(2)] },
    // Two limits: 2 per burst, 10 in all. A refusal by the first must not charge the second.
    { name: 'api', path: '/api/**', limits: [slow(2), slow(10)] },
    { name: 'health', path: '/healthcheck/**', enforce: false, limits: [slow(1)] },
  ],
};

describe.each(['memory', 'redis'] as const)('rules on the %s store', (store) => {
  const stack = perDescribe(async (start) => {
    const redis = store === 'redis' ? await start.redis() : undefined;
    const user = await start.userService();
    const sidecar = await start.sidecar(
      {
        upstream: { url: user.url },
        route: { id: 'rules' },
        limiter,
        ...(redis === undefined ? {} : { redis: { url: redis.url } }),
      },
      { name: `sidecar-rules-${store}` },
    );
    return { redis, sidecar, base: sidecar.config };
  });

  const send = async (
    path: string,
    userId: string | undefined,
    method: 'GET' | 'POST' | 'DELETE' = 'GET',
  ) => {
    const res = await request(`${stack.sidecar.url}${path}`, {
      method,
      headers: userId === undefined ? {} : { 'user-id': userId },
    });
    const body = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body };
  };
  const metric = async (series: string) => {
    const text = await (
      await request(`http://127.0.0.1:${stack.sidecar.adminPort}/metrics`)
    ).body.text();
    return Number(
      new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? Number.NaN,
    );
  };

  it('the first rule matching path and method decides; each rule has its own buckets and an opaque policy name (no route or rule name reaches clients)', async () => {
    const a = await send('/api/search/books', 'ann');
    expect(a.status).not.toBe(429);
    expect(a.headers['ratelimit-policy']).toBe('"rule1";q=200;w=200');
    expect((await send('/api/search/books', 'ann', 'POST')).status).not.toBe(429);
    const refused = await send('/api/search/films', 'ann');
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({
      status: 429,
      detail: expect.stringMatching(/^Rate limit reached; retry in \d+ s\.$/),
    });
    // DELETE is not a search method: the next rule (api) decides, with its own fresh buckets.
    const other = await send('/api/search/books', 'ann', 'DELETE');
    expect(other.status).not.toBe(429);
    expect(other.headers['ratelimit-policy']).toBe(
      '"rule2/0";q=200;w=200, "rule2/1";q=1000;w=1000',
    );
    // Another user has buckets of their own.
    expect((await send('/api/search/books', 'bea')).status).not.toBe(429);
  });

  it('several limits: admitted only when every bucket holds its cost; a refusal charges none; Retry-After is the longest wait', async () => {
    const remaining = (h: Record<string, string | string[] | undefined>) => String(h['ratelimit']);
    const first = await send('/api/items', 'cid');
    expect(first.status).not.toBe(429);
    expect(remaining(first.headers)).toBe('"rule2/0";r=100;t=100, "rule2/1";r=900;t=100');
    await send('/api/items', 'cid');
    for (let i = 0; i < 3; i++) {
      const refused = await send('/api/items', 'cid');
      expect(refused.status).toBe(429);
      // The second bucket still holds 800 (8 requests): refusals took nothing from it.
      expect(remaining(refused.headers)).toBe('"rule2/0";r=0;t=200, "rule2/1";r=800;t=200');
      expect(refused.headers['retry-after']).toBe('100');
      // The single-policy headers describe the bucket that refused.
      expect(refused.headers['ratelimit-limit']).toBe('200');
      expect(refused.headers['ratelimit-remaining']).toBe('0');
    }
    const { redis } = stack;
    if (redis === undefined) return;
    // On Redis, a rule's buckets share one hash tag (one Cluster slot, one script call), each with a TTL.
    const admin = new Redis(redis.url);
    try {
      const keys = (await admin.keys('portcullis:bucket:v2:{rules:api:cid}*')).sort();
      expect(keys).toEqual([
        'portcullis:bucket:v2:{rules:api:cid}',
        'portcullis:bucket:v2:{rules:api:cid}:1',
      ]);
      for (const k of keys) expect(await admin.pttl(k)).toBeGreaterThan(0);
    } finally {
      admin.disconnect();
    }
  });

  it('a shadow rule decides and counts, adds its headers, and never refuses', async () => {
    const before = await metric(
      'portcullis_sidecar_limiter_decisions_total{route="rules",rule="health",decision="limited",shadow="true"}',
    );
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await send('/healthcheck/ready', 'dan');
      statuses.push(res.status);
      expect(res.headers['ratelimit']).toBe('"rule3";r=0;t=100');
      expect(res.headers['retry-after']).toBeUndefined();
    }
    expect(statuses).toEqual([200, 200, 200]);
    expect(
      await metric(
        'portcullis_sidecar_limiter_decisions_total{route="rules",rule="health",decision="allowed",shadow="true"}',
      ),
    ).toBe(1);
    expect(
      (await metric(
        'portcullis_sidecar_limiter_decisions_total{route="rules",rule="health",decision="limited",shadow="true"}',
      )) - (Number.isNaN(before) ? 0 : before),
    ).toBe(2);
    expect(
      await metric('portcullis_sidecar_requests_total{route="rules",outcome="forwarded"}'),
    ).toBeGreaterThanOrEqual(3);
  });

  it('a request no rule matches is forwarded unlimited (no key needed, no headers), or refused when unmatched is refuse', async () => {
    const { sidecar, base } = stack;
    const free = await send('/elsewhere', undefined);
    expect(free.status).toBe(404); // the user service's own answer: it was forwarded
    expect(free.headers['content-type']).not.toBe('application/problem+json');
    expect(free.headers['ratelimit-policy']).toBeUndefined();
    sidecar.write({ ...base, limiter: { ...limiter, unmatched: 'refuse' } });
    await sidecar.program.waitForLine(/config reloaded/, 10_000);
    const refused = await send('/elsewhere', 'eve');
    expect(refused.status).toBe(404);
    expect(refused.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(refused.body)).toMatchObject({
      type: 'urn:portcullis:problem:no-route',
      detail: 'No rule of this route applies to GET requests on this path.',
    });
  });

  it('hot reload keeps the buckets of rules whose names stay, also when their limits change; a renamed rule starts afresh', async () => {
    const { sidecar, base } = stack;
    expect((await send('/api/search/x', 'fay')).status).not.toBe(429);
    expect((await send('/api/search/x', 'fay')).status).not.toBe(429);
    expect((await send('/api/search/x', 'fay')).status).toBe(429);
    // Same names, the search rule's burst raised from 2 to 3 requests: fay's bucket is kept (still
    // empty, now 300 s from full), where a new bucket would start full and admit.
    const raised = {
      rules: [{ ...limiter.rules![0]!, limits: [slow(3)] }, limiter.rules![1]!, limiter.rules![2]!],
    };
    sidecar.write({ ...base, limiter: raised });
    await sidecar.program.waitForLine(/"burstCapacity":300.*config reloaded/, 10_000);
    const kept = await send('/api/search/x', 'fay');
    expect(kept.status).toBe(429);
    expect(kept.headers['ratelimit']).toBe('"rule1";r=0;t=300');
    expect((await send('/api/search/x', 'gus')).headers['ratelimit']).toBe('"rule1";r=200;t=100');
    // Renamed: new buckets.
    sidecar.write({ ...base, limiter: { rules: [{ ...limiter.rules![0]!, name: 'find' }] } });
    await sidecar.program.waitForLine(/"name":"find".*config reloaded/, 10_000);
    const fresh = await send('/api/search/x', 'fay');
    expect(fresh.status).not.toBe(429);
    expect(fresh.headers['ratelimit']).toBe('"rule1";r=100;t=100');
    sidecar.write(base);
    await sidecar.program.waitForLine(/"name":"search".*config reloaded/, 10_000);
  });
});

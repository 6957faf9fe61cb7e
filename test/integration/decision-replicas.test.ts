// The decision service as a platform runs it: several replicas on one Redis share each user's
// bucket exactly (no over-admission), and a Redis outage follows limiter.onStoreError, on the
// HTTP and the gRPC front door alike.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { checkGrpc, specRule, startDecision, type RunningDecision } from './decision-support.ts';

const it = test;

const check = async (decision: RunningDecision, user: string) => {
  const res = await request(`${decision.url}/orders`, { headers: { 'user-id': user } });
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
};

describe('two decision-service replicas on one Redis', () => {
  it('admit together no more than the one bucket holds: over-admission 0', async ({
    start,
    redis,
  }) => {
    const config = {
      route: { id: 'all' },
      limiter: { ...specRule },
      redis: { url: redis.url, commandTimeoutMs: 2000 },
    };
    const replicas = [
      await startDecision(start, config, 'decision-0'),
      await startDecision(start, config, 'decision-1'),
    ];
    const user = `replicas-${Date.now()}`;
    const t0 = performance.now();
    // 40 checks at once, alternating replicas: the bucket (10 tokens, 2 a check, 1 token/s) admits 5 plus the refill of the elapsed time.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => check(replicas[i % 2] as RunningDecision, user)),
    );
    const elapsedS = (performance.now() - t0) / 1000;
    const admitted = answers.filter((a) => a.status === 200).length;
    expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true);
    expect(admitted).toBeGreaterThanOrEqual(5);
    expect(admitted).toBeLessThanOrEqual(
      Math.floor((10 + elapsedS * specRule.replenishRate) / specRule.requestedTokens),
    );
    // Both replicas answered some of them.
    expect(new Set(answers.map((_, i) => i % 2)).size).toBe(2);
  });
});

describe('Redis down: onStoreError', () => {
  it('allow: admitted without limiter headers; deny: 503 problem+json with Retry-After (HTTP and gRPC alike)', async ({
    start,
  }) => {
    const own = await start.redis();
    const base = {
      route: { id: 'all' },
      redis: { url: own.url, commandTimeoutMs: 100, connectTimeoutMs: 200 },
    };
    const allow = await startDecision(
      start,
      { ...base, limiter: { ...specRule, onStoreError: 'allow' } },
      'decision-allow',
    );
    const deny = await startDecision(
      start,
      { ...base, limiter: { ...specRule, onStoreError: 'deny' } },
      'decision-deny',
    );
    expect((await check(allow, 'before')).status).toBe(200);
    await own.kill();

    const allowed = await check(allow, 'outage');
    expect(allowed.status).toBe(200);
    expect(allowed.headers['ratelimit']).toBeUndefined();

    const denied = await check(deny, 'outage');
    expect(denied.status).toBe(503);
    expect(denied.headers['retry-after']).toBe('1');
    expect(denied.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(denied.body)).toMatchObject({
      status: 503,
      type: 'urn:portcullis:problem:limiter-unavailable',
    });

    const [grpcAllowed] = await checkGrpc(allow, ['-path', '/orders', '-header', 'user-id=outage']);
    expect(grpcAllowed).toMatchObject({ code: 0, allowed: true });
    const [grpcDenied] = await checkGrpc(deny, ['-path', '/orders', '-header', 'user-id=outage']);
    expect(grpcDenied).toMatchObject({ code: 14, allowed: false, httpStatus: 503 });
    expect(grpcDenied?.headers['retry-after']).toBe('1');
    await own.start();
  });
});

// The "Normal" limits of the specification (20/s, burst 100, 3 per request). A burst
// admits exactly 33 (100 tokens, 3 each); the 34th is 429 with a correct Retry-After; after a
// wait the refill matches the exact model (checked against the state and time Redis used).
import { Pool } from 'undici';
import { describe, expect } from 'vitest';
import { takeUs, type BucketRule, type BucketState } from '../../lib/token-bucket/bucket.ts';
import { decodeBucketValue } from '../../lib/token-bucket/bucket-value.ts';
import { test } from '../harness/fixtures.ts';
import { sleep } from './sidecar-support.ts';

const rule: BucketRule = { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 };

const it = test
  .extend('sidecar', { scope: 'file' }, ({ start, userService, redis }) =>
    start.sidecar({
      upstream: { url: userService.url },
      route: { id: 'all' },
      limiter: { ...rule },
      redis: { url: redis.url, commandTimeoutMs: 2000 },
    }),
  )
  .extend('pool', { scope: 'file' }, ({ sidecar }, { onCleanup }) => {
    const pool = new Pool(sidecar.url, { connections: 40 });
    onCleanup(() => pool.close());
    return pool;
  })
  .extend('get', { scope: 'file' }, ({ pool }) => async (userId: string) => {
    const res = await pool.request({
      method: 'GET',
      path: '/healthcheck/ready',
      headers: { 'user-id': userId },
    });
    const body = await res.body.text();
    return { status: res.statusCode, headers: res.headers, body };
  });

describe('Normal limits 20/100/3', () => {
  it('a burst admits exactly 33; the others are 429 with Retry-After; the refill then matches the model', async ({
    redisAdmin: admin,
    get,
  }) => {
    // Open the 40 connections first (on another user's bucket) so the burst itself is fast.
    await Promise.all(Array.from({ length: 40 }, (_, i) => get(`warm-${i}`)));

    const key = 'normal-burst';
    const results = await Promise.all(Array.from({ length: 40 }, () => get(key)));
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok.length + limited.length).toBe(40);
    expect(ok).toHaveLength(33);
    for (const r of ok) expect(r.body).toBe('OK');
    for (const r of limited) {
      expect(r.headers['content-type']).toBe('application/problem+json');
      const problem = JSON.parse(r.body) as { status: number; retryAfterMs: number };
      expect(problem.status).toBe(429);
      // At most 1 token left and 3 needed at 20 tokens/s: at most 100 ms; Retry-After rounds up.
      expect(problem.retryAfterMs).toBeGreaterThan(0);
      expect(problem.retryAfterMs).toBeLessThanOrEqual(100);
      expect(r.headers['retry-after']).toBe('1');
      expect(r.headers['ratelimit-limit']).toBe('100');
      expect(['1', '2']).toContain(r.headers['ratelimit-remaining']); // 1 token + what the burst's span refilled
    }

    // Waiting the advertised time is enough.
    const wait = Math.max(
      ...limited.map((r) => (JSON.parse(r.body) as { retryAfterMs: number }).retryAfterMs),
    );
    await sleep(wait + 5);
    const bucket = async () => {
      const state = decodeBucketValue(await admin.getBuffer(`portcullis:bucket:v2:{all:${key}}`));
      expect(state).toMatchObject({
        microTokens: expect.any(Number),
        updatedUs: expect.any(Number),
      });
      return state as BucketState;
    };
    const state0 = await bucket();
    const after = await get(key);
    expect(after.status).toBe(200);

    // Refill after a longer wait: exactly what the model says for the times Redis used (both
    // takes admitted, so both wrote their state).
    const state1 = await bucket();
    await sleep(700);
    const res = await get(key);
    expect(res.status).toBe(200);
    const state2 = await bucket();
    const model = takeUs(state1, rule, state2.updatedUs, 3);
    expect(model.decision.allowed).toBe(true);
    expect(res.headers['ratelimit-remaining']).toBe(String(model.decision.remaining));
    expect(state2.microTokens).toBe(model.state.microTokens);
    // ~0.7 s at 20/s is ~14 tokens: the bucket regained several requests' worth.
    expect(model.decision.remaining).toBeGreaterThanOrEqual(10);
    expect(state0.updatedUs).toBeLessThan(state1.updatedUs);
  });
});

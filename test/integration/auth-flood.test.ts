// An anonymous flood against the real server, on the memory store and on a redis-server run with
// the chart's own arguments. Before, every GET /auth stored an interaction for ten minutes: a flood
// filled Redis, and with the chart's old eviction policy it pushed out sign-in throttles and the
// revoked-token deny list. Now nothing is stored before a sign-in, and a full Redis refuses writes
// (noeviction): the server answers 503 and logs it, and never forgets a revocation.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { perDescribe, stackOn } from '../harness/fixtures.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { authorize, tokenRequest, trySignIn } from '../harness/auth-flow.ts';
import { SECRETS, type Stack } from '../harness/auth-stack.ts';

/** Throttle budgets small enough to lock bob out in a few attempts. */
const TIGHT = { AUTH_SIGNIN_USER_ADDRESS_BURST: '2', AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1' };

async function accessToken(stack: Stack): Promise<string> {
  const { location } = await authorize({
    issuer: stack.issuer,
    clientId: 'demo-client',
    redirectUri: stack.redirectUri,
  });
  const res = await tokenRequest(stack.issuer, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code') ?? '',
    redirect_uri: stack.redirectUri,
    client_id: 'demo-client',
    client_secret: SECRETS.post,
  });
  expect(res.status).toBe(200);
  return String(res.json['access_token']);
}

const clientForm = (token: string) =>
  new URLSearchParams({ token, client_id: 'demo-client', client_secret: SECRETS.post });
const revoke = (stack: Stack, token: string) =>
  fetch(`${stack.issuer}/revoke`, { method: 'POST', body: clientForm(token) });
async function active(stack: Stack, token: string): Promise<boolean> {
  const res = await fetch(`${stack.issuer}/introspect`, {
    method: 'POST',
    body: clientForm(token),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { active: boolean }).active;
}

/** `total` GETs, `parallel` at a time, fresh browsers (no cookies); every answer must be 200. */
async function flood(urls: readonly string[], total: number, parallel = 32): Promise<void> {
  let sent = 0;
  const statuses = new Map<number, number>();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (sent < total) {
        const url = urls[sent++ % urls.length] ?? '';
        const res = await fetch(url, { redirect: 'manual' });
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }),
  );
  expect(Object.fromEntries(statuses)).toEqual({ 200: total });
}

describe.each(['memory', 'redis'] as const)('an anonymous GET flood (%s store)', (store) => {
  const on = stackOn(store, { authEnv: TIGHT });

  it('stores nothing, and every throttle and revocation survives it', async () => {
    const stack = on.stack();
    // bob is locked out from this address; a token is revoked.
    const attempts = [];
    for (let i = 0; i < 3; i++)
      attempts.push((await trySignIn(stack.issuer, stack.redirectUri, 'bob', 'guess')).status);
    expect(attempts).toEqual([303, 303, 429]);
    const revoked = await accessToken(stack);
    expect((await revoke(stack, revoked)).status).toBe(200);
    expect(await active(stack, revoked)).toBe(false);

    const redis = store === 'redis' ? new Redis(on.redisUrl()) : undefined;
    try {
      const keysBefore = await redis?.dbsize();
      const authUrl = `${stack.issuer}/auth?${new URLSearchParams({ client_id: 'demo-client', redirect_uri: stack.redirectUri, response_type: 'code', state: 'x'.repeat(1000) })}`;
      await flood([authUrl, authUrl, authUrl, `${stack.issuer}/consents`], 4000);
      // Not one key more in Redis (before, one interaction per request).
      if (redis !== undefined) expect(await redis.dbsize()).toBe(keysBefore);
    } finally {
      redis?.disconnect();
    }

    expect((await trySignIn(stack.issuer, stack.redirectUri, 'bob', 'builder')).status).toBe(429);
    expect(await active(stack, revoked)).toBe(false);
    // The flood's pages still work for a real sign-in afterwards.
    expect(
      (
        await authorize({
          issuer: stack.issuer,
          clientId: 'demo-client',
          redirectUri: stack.redirectUri,
        })
      ).location.searchParams.get('code'),
    ).not.toBeNull();
  });
});

describe('a full Redis (maxmemory reached, noeviction as the chart runs it)', () => {
  const password = 'auth-flood-redis-password';
  const redis = perDescribe((start) =>
    start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), { password }),
  );
  const stack = perDescribe((start) => start.authStack({ redisUrl: redis.url }));
  const admin = perDescribe(async (start) => start.redisClient(redis.url));

  /**
   * Fills Redis up to a maxmemory just above what it uses now; filler keys are `filler:*`. Values
   * shrink at the end so that no small write fits in what a big one's freed buffers leave.
   */
  async function fill(): Promise<void> {
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1]);
    await admin.config('SET', 'maxmemory', String(used + 2 * 1024 * 1024));
    let i = 0;
    for (const size of [64 * 1024, 1024, 8]) {
      const value = 'x'.repeat(size);
      for (;;) {
        const stored = await admin.set(`filler:${i++}`, value, 'EX', 3600).then(
          () => true,
          (err: unknown) =>
            err instanceof Error && err.message.startsWith('OOM') ? false : Promise.reject(err),
        );
        if (!stored) break;
      }
    }
  }

  it('refuses a revocation with 503 and a log line instead of forgetting it, and keeps earlier ones', async () => {
    const earlier = await accessToken(stack);
    expect((await revoke(stack, earlier)).status).toBe(200);
    const live = await accessToken(stack);
    await fill();

    const refused = await revoke(stack, live);
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'the server could not complete the request; try again',
    });
    expect(await active(stack, earlier)).toBe(false);
    // A sign-in is refused too (its throttle cannot be charged): a 503 page, never a password check.
    const signIn = await trySignIn(stack.issuer, stack.redirectUri, 'alice', 'wonderland');
    expect(signIn.status).toBe(503);
    const lines = stack.programs[0]?.lines ?? [];
    expect(lines.some((l) => l.includes('"level":50') && l.includes('storage full'))).toBe(true);
    expect(stack.programs[0]?.exited()).toBe(false);

    // Room again: the same revocation succeeds and holds.
    await admin.eval(
      "for _, k in ipairs(redis.call('KEYS', 'filler:*')) do redis.call('DEL', k) end",
      0,
    );
    expect((await revoke(stack, live)).status).toBe(200);
    expect(await active(stack, live)).toBe(false);
  });
});

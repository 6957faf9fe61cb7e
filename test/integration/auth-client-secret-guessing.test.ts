// Guessing a client secret is throttled per (client_id, client address): before, /token, /revoke
// and /introspect checked every guess. After the burst of failures the endpoints answer 429 with
// Retry-After without checking the secret, so the right secret from that address waits too, while
// another address and another client are not affected. The budget lives in each replica's memory,
// not in the store, so one store is enough here.
import { describe, expect, it } from 'vitest';
import { stackOn } from '../harness/fixtures.ts';
import { SECRETS } from '../harness/auth-stack.ts';

describe('client secret guessing', () => {
  // A burst of 3 failures refilling one per 60 s: the test never waits for a refill.
  // Behind a trusted proxy the client address comes from X-Forwarded-For.
  const on = stackOn('memory', {
    authEnv: {
      AUTH_CLIENT_AUTH_FAILURES_BURST: '3',
      AUTH_CLIENT_AUTH_FAILURE_REFILL_SECONDS: '60',
      AUTH_TRUST_PROXY: 'true',
    },
  });

  const post = async (
    path: string,
    form: Record<string, string>,
    address: string,
    basic?: [string, string],
  ) => {
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      'x-forwarded-for': address,
    };
    if (basic !== undefined)
      headers['authorization'] = `Basic ${Buffer.from(basic.join(':')).toString('base64')}`;
    const res = await fetch(`${on.stack().issuer}${path}`, {
      method: 'POST',
      headers,
      body: new URLSearchParams(form),
    });
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      json: (await res.json()) as Record<string, unknown>,
    };
  };
  /** A refresh grant with a bogus token: 401 when authentication fails, 400 invalid_grant once it passed. */
  const refreshAs = (clientId: string, secret: string, address: string) =>
    post(
      '/token',
      {
        grant_type: 'refresh_token',
        refresh_token: 'bogus',
        client_id: clientId,
        client_secret: secret,
      },
      address,
    );
  const lockouts = () =>
    on.stack().programs[0]?.lines.filter((l) => l.includes('client authentication locked')) ?? [];

  it('after the burst of wrong secrets: 429 with Retry-After, even for the right secret, at every endpoint', async () => {
    const address = '203.0.113.20';
    const guesses = [];
    for (let i = 0; i < 3; i++)
      guesses.push((await refreshAs('demo-client', `guess-${i}-0123456789abcdef`, address)).status);
    expect(guesses).toEqual([401, 401, 401]);

    const locked = await refreshAs('demo-client', 'guess-3-0123456789abcdef', address);
    expect(locked.status).toBe(429);
    expect(locked.json).toEqual({
      error: 'invalid_client',
      error_description: expect.stringMatching(/^too many failed client authentications/),
    });
    expect(Number(locked.retryAfter)).toBeGreaterThan(50);
    expect(Number(locked.retryAfter)).toBeLessThanOrEqual(60);

    // The right secret is not even checked while the budget is empty, at /token, /introspect and /revoke.
    const right = await refreshAs('demo-client', SECRETS.post, address);
    expect(right.status).toBe(429);
    expect(right.retryAfter).not.toBeNull();
    for (const path of ['/introspect', '/revoke']) {
      const res = await post(
        path,
        { token: 'x', client_id: 'demo-client', client_secret: SECRETS.post },
        address,
      );
      expect(res.status, path).toBe(429);
    }
    // One warning per lockout, however many requests it refuses.
    expect(
      lockouts().filter((l) => l.includes('"client_id":"demo-client"') && l.includes(address)),
    ).toHaveLength(1);
  });

  it('another address, and another client from the locked address, authenticate as before', async () => {
    const address = '203.0.113.21';
    for (let i = 0; i < 4; i++)
      await refreshAs('demo-client', `guess-${i}-0123456789abcdef`, address);
    expect((await refreshAs('demo-client', SECRETS.post, address)).status).toBe(429);

    const elsewhere = await refreshAs('demo-client', SECRETS.post, '198.51.100.9');
    expect(elsewhere.json).toEqual({
      error: 'invalid_grant',
      error_description: expect.any(String),
    });
    const otherClient = await refreshAs('other-client', SECRETS.other, address);
    expect(otherClient.status).toBe(400);
    expect(otherClient.json['error']).toBe('unauthorized_client');
  });

  it('HTTP Basic guesses count the same way', async () => {
    const address = '203.0.113.22';
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (
          await post('/introspect', { token: 'x' }, address, [
            'basic-client',
            `guess-${i}-0123456789abcdef`,
          ])
        ).status,
      );
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(
      (await post('/introspect', { token: 'x' }, address, ['basic-client', SECRETS.basic])).status,
    ).toBe(429);
    expect(
      await post('/introspect', { token: 'x' }, '198.51.100.10', ['basic-client', SECRETS.basic]),
    ).toMatchObject({ status: 200, json: { active: false } });
  });

  it('failures below the burst do not slow the right secret down', async () => {
    const address = '203.0.113.23';
    expect((await refreshAs('demo-client', 'guess-0123456789abcdef', address)).status).toBe(401);
    expect((await refreshAs('demo-client', 'guess-0123456789abcdef', address)).status).toBe(401);
    expect((await refreshAs('demo-client', SECRETS.post, address)).json['error']).toBe(
      'invalid_grant',
    );
  });
});

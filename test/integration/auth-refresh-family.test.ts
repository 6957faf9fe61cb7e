// Refresh-token families against the real server: a family (one code redemption) ends at an
// absolute age however often it rotates, and on Redis the user+client index that consent
// revocation walks never expires before a family in it (it used to keep the TTL it got when the
// first family was created, while every rotation extended the family itself).
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { stackOn } from '../harness/fixtures.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const MAX_AGE_S = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(['memory', 'redis'] as const)('refresh-token families (%s store)', (store) => {
  const on = stackOn(store, {
    authEnv: { AUTH_REFRESH_FAMILY_MAX_AGE_SECONDS: String(MAX_AGE_S) },
  });

  async function signIn(): Promise<{ refresh: string; at: number }> {
    const { location } = await authorize({
      issuer: on.stack().issuer,
      clientId: 'demo-client',
      redirectUri: on.stack().redirectUri,
    });
    const at = Date.now();
    const res = await tokenRequest(on.stack().issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: on.stack().redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(res.status).toBe(200);
    return { refresh: String(res.json['refresh_token']), at };
  }
  const refresh = (token: string) =>
    tokenRequest(on.stack().issuer, {
      grant_type: 'refresh_token',
      refresh_token: token,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });

  it(`a family ends ${MAX_AGE_S} s after the sign-in, however often it rotated`, async () => {
    const { refresh: first, at } = await signIn();
    let token = first;
    for (const offset of [800, 1600, 2400]) {
      await sleep(at + offset - Date.now());
      const res = await refresh(token);
      expect(res.status, `rotation at ${offset} ms`).toBe(200);
      token = String(res.json['refresh_token']);
    }
    await sleep(at + MAX_AGE_S * 1000 + 300 - Date.now());
    const late = await refresh(token);
    expect(late.status).toBe(400);
    expect(late.json['error']).toBe('invalid_grant');
  });
});

describe('the refresh-token index (redis store)', () => {
  const on = stackOn('redis');

  it('the user+client index lives at least as long as every family in it', async () => {
    const client = new Redis(on.redisUrl());
    try {
      const { location } = await authorize({
        issuer: on.stack().issuer,
        clientId: 'demo-client',
        redirectUri: on.stack().redirectUri,
      });
      const first = await tokenRequest(on.stack().issuer, {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code') ?? '',
        redirect_uri: on.stack().redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      expect(first.status).toBe(200);
      await sleep(1200);
      const res = await tokenRequest(on.stack().issuer, {
        grant_type: 'refresh_token',
        refresh_token: String(first.json['refresh_token']),
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      expect(res.status).toBe(200);
      const familyId = String(res.json['refresh_token']).split('.')[0];
      const familyTtl = await client.pttl(`portcullis:auth:default:rtf:${familyId}`);
      const indexTtl = await client.pttl('portcullis:auth:default:uc:alice:demo-client');
      expect(familyTtl).toBeGreaterThan(0);
      // Without the fix the index kept the TTL of the family's creation, 1.2 s short of it.
      expect(indexTtl).toBeGreaterThanOrEqual(familyTtl - 50);
    } finally {
      client.disconnect();
    }
  });
});

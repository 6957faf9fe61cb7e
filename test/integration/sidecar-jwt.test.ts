// The jwt key source end to end: access tokens issued by the real auth server (sign-in, consent,
// code exchange), two sidecar processes sharing a real Redis, verifying against the auth server's
// JWKS. A client that sends USER-ID values of its choosing stays in its own bucket, the service
// behind receives the verified subject as USER-ID, and a request without a valid token gets a
// 401 problem+json with an RFC 6750 challenge and never reaches the service.
import { SignJWT, generateKeyPair, importJWK } from 'jose';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { freePort } from '../harness/ports.ts';
import { startSidecar, type RunningSidecar } from '../harness/programs.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { AUDIENCE, SECRETS } from '../harness/auth-stack.ts';

const it = test
  .extend('stack', { scope: 'file' }, ({ start }) => start.authStack({ userService: true }))
  /** An upstream that records the USER-ID header of every request it gets. */
  .extend('upstream', { scope: 'file' }, async ({ start }) => {
    const seen: (string | undefined)[] = [];
    const { url } = await start.upstream((req, res) => {
      seen.push(req.headers['user-id'] as string | undefined);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
    return { seen, url };
  })
  .extend('jwt', { scope: 'file' }, ({ stack }) => ({
    issuer: stack.issuer,
    audience: AUDIENCE,
    jwksUrl: `${stack.issuer}/jwks.json`,
  }))
  .extend('sidecars', { scope: 'file' }, ({ start, redis, upstream, jwt }) =>
    start.sidecars(
      2,
      {
        upstream: { url: upstream.url },
        route: { id: 'jwt' },
        limiter: { replenishRate: 1, burstCapacity: 4, key: 'jwt', jwt },
        redis: { url: redis.url },
      },
      'sidecar-jwt',
    ),
  )
  .extend('meSidecar', { scope: 'file' }, ({ start, stack, jwt }) =>
    start.sidecar(
      {
        upstream: { url: stack.userServiceUrl as string },
        route: { id: 'me' },
        limiter: { replenishRate: 1, burstCapacity: 100, key: 'jwt', jwt },
      },
      { name: 'sidecar-jwt-me' },
    ),
  )
  .extend('tokens', { scope: 'file' }, async ({ stack }) => {
    const tokenFor = async (username: string, password: string) => {
      const { location } = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
        username,
        password,
      });
      const t = await tokenRequest(stack.issuer, {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code') ?? '',
        redirect_uri: stack.redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      return String(t.json['access_token']);
    };
    return {
      alice: await tokenFor('alice', 'wonderland'),
      bob: await tokenFor('bob', 'builder'),
    } as Record<string, string>;
  });

describe('jwt key source: verified subject as the bucket key', () => {
  const send = async (sidecar: RunningSidecar, headers: Record<string, string>, path = '/data') => {
    const res = await request(`${sidecar.url}${path}`, { headers });
    return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
  };

  it("a spoofed USER-ID cannot escape the bucket: every request with alice's token counts as alice, on both sidecars", async ({
    upstream,
    sidecars,
    tokens,
  }) => {
    const before = upstream.seen.length;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await send(sidecars[i % 2] as RunningSidecar, {
        authorization: `Bearer ${tokens['alice'] as string}`,
        'USER-ID': `mallory-${i}`,
      });
      statuses.push(res.status);
    }
    // Burst 4, 1 per second: the first four pass (a fifth if a second went by), the rest are 429.
    const admitted = statuses.filter((s) => s === 200).length;
    expect([4, 5]).toContain(admitted);
    expect(statuses.filter((s) => s === 429)).toHaveLength(8 - admitted);
    // The service saw the verified subject, never a client-chosen value.
    expect(upstream.seen.slice(before)).toEqual(Array.from({ length: admitted }, () => 'alice'));
    // bob has a bucket of his own.
    expect(
      (
        await send(sidecars[0] as RunningSidecar, {
          authorization: `Bearer ${tokens['bob'] as string}`,
          'USER-ID': 'alice',
        })
      ).status,
    ).toBe(200);
    expect(upstream.seen.at(-1)).toBe('bob');
  });

  it('no token: 401 problem+json with a bare Bearer challenge, and the service is not called', async ({
    upstream,
    sidecars,
  }) => {
    const before = upstream.seen.length;
    const res = await send(sidecars[0] as RunningSidecar, { 'USER-ID': 'alice' });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'urn:portcullis:problem:invalid-token',
      status: 401,
    });
    expect(upstream.seen.length).toBe(before);
  });

  it.for([
    ['signed by another key', async () => (await generateKeyPair('ES256')).privateKey, {}],
    ['expired', undefined, { exp: Math.floor(Date.now() / 1000) - 60 }],
    ['for another audience', undefined, { aud: 'urn:someone-else' }],
  ] as const)(
    'a token %s: 401 invalid_token, the service is not called',
    async ([, foreignKey, claims], { stack, upstream, sidecars }) => {
      const jwk = stack.keys.keys[0];
      if (jwk === undefined) throw new Error('no signing key');
      const key = foreignKey === undefined ? await importJWK(jwk, 'ES256') : await foreignKey();
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ client_id: 'demo-client' })
        .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' })
        .setIssuer(stack.issuer)
        .setSubject('alice')
        .setAudience('aud' in claims ? claims.aud : AUDIENCE)
        .setIssuedAt(now - 120)
        .setExpirationTime('exp' in claims ? claims.exp : now + 60)
        .sign(key);
      const before = upstream.seen.length;
      const res = await send(sidecars[1] as RunningSidecar, { authorization: `Bearer ${token}` });
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(
        /^Bearer error="invalid_token", error_description="The access token /,
      );
      expect(upstream.seen.length).toBe(before);
    },
  );

  it('GET /me through the gateway: the user service accepts the same token', async ({
    meSidecar,
    tokens,
  }) => {
    const res = await send(
      meSidecar,
      { authorization: `Bearer ${tokens['alice'] as string}` },
      '/me',
    );
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ sub: 'alice' });
    expect(res.headers['ratelimit-remaining']).toBe('99');
  });

  it('the key set out of reach: 503 problem+json with Retry-After, not a 401', async ({
    stack,
    upstream,
    tokens,
  }) => {
    const closed = await freePort();
    const cut = await startSidecar(
      {
        upstream: { url: upstream.url },
        route: { id: 'nokeys' },
        limiter: {
          replenishRate: 1,
          burstCapacity: 4,
          key: 'jwt',
          jwt: {
            issuer: stack.issuer,
            audience: AUDIENCE,
            jwksUrl: `http://127.0.0.1:${closed}/jwks.json`,
          },
        },
      },
      { name: 'sidecar-jwt-nokeys' },
    );
    try {
      const res = await send(cut, { authorization: `Bearer ${tokens['alice'] as string}` });
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(JSON.parse(res.body)).toMatchObject({
        type: 'urn:portcullis:problem:token-keys-unavailable',
        status: 503,
      });
    } finally {
      await cut.program.stop();
    }
  });
});

// GET /me on the user service as a resource server (RFC 6750): tokens minted here with the
// stack's signing key (and variants of it) show each verification rule at work.
import { SignJWT, generateKeyPair, importJWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { AUDIENCE, SECRETS } from '../harness/auth-stack.ts';

describe('GET /me (resource server, RFC 6750)', () => {
  const stack = perDescribe((start) => start.authStack({ userService: true }));

  const me = (authorization?: string) =>
    fetch(
      `${stack.userServiceUrl}/me`,
      authorization === undefined ? {} : { headers: { authorization } },
    );

  async function mint(
    overrides: {
      claims?: Record<string, unknown>;
      header?: Record<string, unknown>;
      key?: 'own' | 'foreign';
      exp?: number;
    } = {},
  ) {
    const jwk = stack.keys.keys[0];
    if (jwk === undefined) throw new Error('no key');
    const key =
      overrides.key === 'foreign'
        ? (await generateKeyPair('ES256')).privateKey
        : await importJWK(jwk, 'ES256');
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      client_id: 'demo-client',
      scope: 'profile',
      name: 'Alice Liddell',
      ...overrides.claims,
    })
      .setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt', ...overrides.header })
      .setIssuer(String(overrides.claims?.['iss'] ?? stack.issuer))
      .setSubject('alice')
      .setAudience(String(overrides.claims?.['aud'] ?? AUDIENCE))
      .setIssuedAt(now - 5)
      .setExpirationTime(overrides.exp ?? now + 60)
      .setJti(`jti-${Math.random()}`)
      .sign(key);
  }

  it('accepts a token from the auth server and returns the profile', async () => {
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const t = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    const res = await me(`Bearer ${String(t.json['access_token'])}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({
      sub: 'alice',
      name: 'Alice Liddell',
      preferred_username: 'alice',
    });
  });

  it('no credentials: 401 with a bare Bearer challenge (no error code)', async () => {
    const res = await me();
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="user-service"');
    const basic = await me('Basic YTpi');
    expect(basic.status).toBe(401);
  });

  it('a malformed Authorization header is 400 invalid_request', async () => {
    const res = await me('Bearer a b c');
    expect(res.status).toBe(400);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_request"');
    expect(await res.json()).toMatchObject({ error: 'invalid_request' });
  });

  it.each([
    [
      'tampered',
      async () => {
        const [h, p, s] = (await mint()).split('.');
        const payload = JSON.parse(Buffer.from(p ?? '', 'base64url').toString()) as Record<
          string,
          unknown
        >;
        payload['sub'] = 'mallory';
        return `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
      },
    ],
    ['expired', () => mint({ exp: Math.floor(Date.now() / 1000) - 120 })],
    ['for another audience', () => mint({ claims: { aud: 'urn:someone-else' } })],
    ['from another issuer', () => mint({ claims: { iss: 'http://evil.example' } })],
    ['signed with a foreign key under our kid', () => mint({ key: 'foreign' })],
    ['typed JWT instead of at+jwt (e.g. an ID token)', () => mint({ header: { typ: 'JWT' } })],
    [
      'unsigned (alg none)',
      async () => {
        const [, p] = (await mint()).split('.');
        return `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${p}.`;
      },
    ],
    ['not a JWT at all', async () => 'abc.def.ghi'],
  ])('a token %s is 401 invalid_token', async (_name, make) => {
    const res = await me(`Bearer ${await make()}`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(
      /^Bearer realm="user-service", error="invalid_token", error_description="[^"]+"$/,
    );
    expect(await res.json()).toMatchObject({ error: 'invalid_token' });
  });

  it('a valid token without the profile scope is 403 insufficient_scope', async () => {
    const res = await me(`Bearer ${await mint({ claims: { scope: 'email' } })}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(res.headers.get('www-authenticate')).toContain('scope="profile"');
  });
});

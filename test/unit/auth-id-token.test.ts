// ID tokens and the OpenID Connect metadata in process: the id_token's shape, at_hash, that an
// access token and an id_token never validate as each other, the refusal of a registry where a
// client id is the access tokens' audience, the refresh-token rule with openid, and discovery.
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { clientIdsBesideAudience } from '../../lib/config/client-registry.ts';
import { issueAccessToken, verifyOwnAccessToken } from '../../services/auth-server/access-token.ts';
import { buildApp } from '../../services/auth-server/app.ts';
import { accessTokenHash } from '../../services/auth-server/id-token.ts';
import { issueTokens, mayRefresh } from '../../services/auth-server/issue-tokens.ts';
import { createAccessTokenVerifier } from '../../services/user-service/routes/me.ts';
import { ISSUER, REDIRECT, app, context } from './auth-oidc-context.ts';

describe('id_token', () => {
  it("is a typ JWT for the client alone, with azp, auth_time, nonce, at_hash, exp of the access token and the scope's claims", async () => {
    const ctx = await context();
    const { body } = await issueTokens(ctx, app, {
      user: 'alice',
      scope: ['openid', 'profile', 'groups'],
      authTime: ctx.now() - 5000,
      nonce: 'n-0S6_WzA2Mj',
    });
    const idToken = body.id_token ?? '';
    expect(decodeProtectedHeader(idToken)).toMatchObject({ typ: 'JWT', alg: 'ES256' });
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(ctx.keys.publicJwks()), {
      issuer: ISSUER,
      audience: 'app',
      typ: 'JWT',
      currentDate: new Date(ctx.now()),
    });
    expect(payload).toMatchObject({
      sub: 'alice',
      aud: 'app',
      azp: 'app',
      nonce: 'n-0S6_WzA2Mj',
      name: 'Alice',
      groups: ['readers'],
      auth_time: Math.floor(ctx.now() / 1000) - 5,
    });
    expect(payload.exp).toBe(decodeJwt(body.access_token).exp);
    expect(payload['at_hash']).toBe(
      createHash('sha256').update(body.access_token).digest().subarray(0, 16).toString('base64url'),
    );
  });

  it('at_hash is the left half of SHA-256 of the access token, base64url', () => {
    // The value OpenID Connect Core's appendix A.4 gives for its sample access token.
    expect(accessTokenHash('jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y')).toBe(
      '77QmUPtjPfzWtF2AnpK9RQ',
    );
  });

  it('comes only with openid; a plain OAuth grant has none', async () => {
    const ctx = await context();
    const { body } = await issueTokens(ctx, app, {
      user: 'alice',
      scope: ['profile'],
      authTime: ctx.now(),
    });
    expect(body.id_token).toBeUndefined();
  });

  it('an access token is never an id_token and an id_token never an access token', async () => {
    const ctx = await context();
    const { body } = await issueTokens(ctx, app, {
      user: 'alice',
      scope: ['openid'],
      authTime: ctx.now(),
    });
    const jwks = createLocalJWKSet(ctx.keys.publicJwks());
    const at = new Date(ctx.now());
    // As an id_token for the client: wrong audience and wrong typ.
    await expect(
      jwtVerify(body.access_token, jwks, { issuer: ISSUER, audience: 'app', currentDate: at }),
    ).rejects.toThrow(/aud/);
    await expect(
      jwtVerify(body.access_token, jwks, { issuer: ISSUER, typ: 'JWT', currentDate: at }),
    ).rejects.toThrow(/typ/);
    // As an access token: the auth server's own check and the resource server's both refuse it.
    expect(
      await verifyOwnAccessToken(ctx.keys, body.id_token ?? '', ISSUER, ctx.now()),
    ).toBeUndefined();
    const rs = createAccessTokenVerifier(
      { issuer: ISSUER, audience: 'app', jwksUrl: 'http://unused.invalid/' },
      jwks,
    );
    expect((await rs(body.id_token ?? '')).ok).toBe(false);
  });

  it('a registry where a client id equals the access-token audience is refused', () => {
    expect(() => clientIdsBesideAudience({ clients: [app] }, 'app', 'clients.json')).toThrow(
      /clients\.0\.client_id: equals the access-token audience/,
    );
    expect(
      clientIdsBesideAudience({ clients: [app] }, 'urn:rs', 'clients.json').clients,
    ).toHaveLength(1);
  });
});

describe('refresh tokens with openid (OpenID Connect Core 11)', () => {
  it('only with offline_access once openid is granted; plain OAuth keeps the registration rule', () => {
    expect(mayRefresh(app, ['openid', 'profile'])).toBe(false);
    expect(mayRefresh(app, ['openid', 'offline_access'])).toBe(true);
    expect(mayRefresh(app, ['profile'])).toBe(true);
    expect(
      mayRefresh({ ...app, grant_types: ['authorization_code'] }, ['openid', 'offline_access']),
    ).toBe(false);
  });
});

describe('discovery', () => {
  it.each(['ES256', 'RS256'] as const)(
    "openid-configuration lists the key ring's algorithm (%s) and equals the OAuth metadata",
    async (alg) => {
      const server = await buildApp({ ctx: await context(alg) });
      const oidc = await server.inject({ method: 'GET', url: '/.well-known/openid-configuration' });
      const oauth = await server.inject({
        method: 'GET',
        url: '/.well-known/oauth-authorization-server',
      });
      expect(oidc.statusCode).toBe(200);
      expect(oidc.json()).toEqual(oauth.json());
      expect(oidc.json()).toMatchObject({
        issuer: ISSUER,
        id_token_signing_alg_values_supported: [alg],
        subject_types_supported: ['public'],
        request_uri_parameter_supported: false,
      });
      expect(oidc.json().scopes_supported).toEqual(
        expect.arrayContaining(['openid', 'profile', 'email', 'groups', 'offline_access']),
      );
      expect(oidc.json().claims_supported).toEqual(
        expect.arrayContaining(['sub', 'auth_time', 'nonce', 'email_verified', 'groups']),
      );
    },
  );

  it('a nonce longer than 512 characters is refused on the redirect', async () => {
    const server = await buildApp({ ctx: await context() });
    const query = (nonce: string) =>
      new URLSearchParams({
        client_id: 'app',
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid',
        state: 's',
        nonce,
      });
    const long = await server.inject({ method: 'GET', url: `/auth?${query('n'.repeat(513))}` });
    expect(long.statusCode).toBe(303);
    expect(new URL(String(long.headers['location'])).searchParams.get('error')).toBe(
      'invalid_request',
    );
    const ok = await server.inject({ method: 'GET', url: `/auth?${query('n'.repeat(512))}` });
    expect(ok.statusCode).toBe(200);
  });
});

describe('userinfo', () => {
  it('refuses an access token of this issuer meant for another audience', async () => {
    const ctx = await context();
    const server = await buildApp({ ctx });
    const forOther = await issueAccessToken(ctx.keys, {
      issuer: ISSUER,
      audience: 'urn:other',
      subject: 'alice',
      clientId: 'app',
      scope: ['openid'],
      authTime: ctx.now(),
      profile: {},
      nowMs: ctx.now(),
      ttlSeconds: 300,
    });
    const res = await server.inject({
      method: 'GET',
      url: '/userinfo',
      headers: { authorization: `Bearer ${forOther.token}` },
    });
    expect(res.statusCode).toBe(401);
    expect(String(res.headers['www-authenticate'])).toMatch(
      /error="invalid_token", error_description="the access token is not meant for this server"/,
    );
    const { body } = await issueTokens(ctx, app, {
      user: 'alice',
      scope: ['openid', 'groups'],
      authTime: ctx.now(),
    });
    const ok = await server.inject({
      method: 'GET',
      url: '/userinfo',
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(ok.json()).toEqual({ sub: 'alice', groups: ['readers'] });
  });
});

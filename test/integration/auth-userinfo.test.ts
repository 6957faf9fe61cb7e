// The UserInfo endpoint against the real server on both stores: openid-client's fetchUserInfo,
// a POST with the token in the form, and RFC 6750 challenges for a missing, revoked, foreign or
// under-scoped token.
import * as client from 'openid-client';
import { describe, expect, it } from 'vitest';
import { stackOn } from '../harness/fixtures.ts';
import { authorize, pkce, tokenRequest, walk } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

describe.each(['memory', 'redis'] as const)('userinfo (%s store)', (store) => {
  const on = stackOn(store);

  async function oidcTokens(scope: string) {
    const config = await client.discovery(
      new URL(on.stack().issuer),
      'oidc-client',
      undefined,
      client.ClientSecretBasic(SECRETS.oidc),
      { execute: [client.allowInsecureRequests] },
    );
    const { verifier, challenge } = pkce();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: on.stack().redirectUri,
      scope,
      nonce,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    });
    const { location } = await walk(url.toString());
    const tokens = await client.authorizationCodeGrant(config, location, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    return { config, tokens };
  }
  const userinfo = (init: RequestInit) => fetch(`${on.stack().issuer}/userinfo`, init);

  it('openid-client: fetchUserInfo returns the claims of the granted scopes, groups included', async () => {
    const { config, tokens } = await oidcTokens('openid profile email groups');
    const info = await client.fetchUserInfo(
      config,
      tokens.access_token,
      tokens.claims()?.sub ?? '',
    );
    expect(info).toEqual({
      sub: 'alice',
      name: 'Alice Liddell',
      preferred_username: 'alice',
      email: 'alice@example.com',
      email_verified: true,
      groups: ['readers', 'wonderland-admins'],
    });
  });

  it('POST with the token in a form body; only what the scopes release', async () => {
    const { tokens } = await oidcTokens('openid email');
    const res = await userinfo({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.access_token }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({
      sub: 'alice',
      email: 'alice@example.com',
      email_verified: true,
    });
  });

  it('no token: 401 with a bare Bearer challenge; a malformed header: 400 invalid_request', async () => {
    const none = await userinfo({});
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="${on.stack().issuer}"`);
    const bad = await userinfo({ headers: { authorization: 'Bearer a b' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_request"/);
  });

  it('a revoked access token, an id_token and a garbled token are 401 invalid_token', async () => {
    const { tokens } = await oidcTokens('openid offline_access');
    const before = await userinfo({ headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(before.status).toBe(200);
    const revoked = await fetch(`${on.stack().issuer}/revoke`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`oidc-client:${SECRETS.oidc}`).toString('base64')}`,
      },
      body: new URLSearchParams({ token: tokens.access_token }),
    });
    expect(revoked.status).toBe(200);
    for (const token of [
      tokens.access_token,
      tokens.id_token ?? '',
      `${tokens.access_token.slice(0, -4)}AAAA`,
    ]) {
      const res = await userinfo({ headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(
        /^Bearer realm="[^"]+", error="invalid_token"/,
      );
    }
  });

  it('an access token granted without openid is 403 insufficient_scope', async () => {
    const { location } = await authorize({
      issuer: on.stack().issuer,
      clientId: 'demo-client',
      redirectUri: on.stack().redirectUri,
      scope: 'profile',
    });
    const res = await tokenRequest(on.stack().issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: on.stack().redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    const info = await userinfo({
      headers: { authorization: `Bearer ${String(res.json['access_token'])}` },
    });
    expect(info.status).toBe(403);
    expect(info.headers.get('www-authenticate')).toMatch(
      /error="insufficient_scope".*scope="openid"/,
    );
  });
});

// OpenID Connect sign-in with independent relying-party libraries, on both stores: openid-client
// in its OIDC mode (discovery, nonce, id_token validation, refresh) and oauth4webapi's OIDC
// helpers. The id_token is an ES256 JWT whose algorithm the clients learn from discovery only.
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { stackOn } from '../harness/fixtures.ts';
import { walk } from '../harness/auth-flow.ts';
import { AUDIENCE, SECRETS } from '../harness/auth-stack.ts';

const insecure = { [oauth.allowInsecureRequests]: true };

describe.each(['memory', 'redis'] as const)('OpenID Connect sign-in (%s store)', (store) => {
  const on = stackOn(store, { userService: true });

  async function rp(): Promise<client.Configuration> {
    // No id_token_signed_response_alg: the library takes ES256 from the discovery document.
    return client.discovery(
      new URL(on.stack().issuer),
      'oidc-client',
      undefined,
      client.ClientSecretBasic(SECRETS.oidc),
      {
        execute: [client.allowInsecureRequests],
      },
    );
  }

  async function signIn(config: client.Configuration, scope: string, nonce = client.randomNonce()) {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: on.stack().redirectUri,
      scope,
      nonce,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      // Unknown OIDC parameters are ignored (Core 3.1.2.1).
      display: 'page',
      ui_locales: 'en',
    });
    const { location } = await walk(url.toString());
    return { location, verifier, state, nonce };
  }

  it('openid-client: discovery, nonce and id_token validation, claims by scope, refresh with a new id_token', async () => {
    const config = await rp();
    const meta = config.serverMetadata();
    expect(meta.id_token_signing_alg_values_supported).toEqual(['ES256']);
    expect(meta.scopes_supported).toEqual(
      expect.arrayContaining(['openid', 'offline_access', 'groups', 'profile', 'email']),
    );
    expect(meta.subject_types_supported).toEqual(['public']);

    const { location, verifier, state, nonce } = await signIn(
      config,
      'openid profile email groups offline_access',
    );
    const tokens = await client.authorizationCodeGrant(config, location, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    expect(claims).toMatchObject({
      iss: on.stack().issuer,
      sub: 'alice',
      aud: 'oidc-client',
      azp: 'oidc-client',
      nonce,
      name: 'Alice Liddell',
      email: 'alice@example.com',
      email_verified: true,
      groups: ['readers', 'wonderland-admins'],
    });
    expect(typeof claims?.['auth_time']).toBe('number');
    expect(decodeProtectedHeader(tokens.id_token ?? '')).toMatchObject({
      alg: 'ES256',
      typ: 'JWT',
    });
    // The id_token never outlives the access token.
    expect(claims?.exp).toBe(decodeJwt(tokens.access_token).exp);
    // The access token carries the groups too.
    expect(decodeJwt(tokens.access_token)['groups']).toEqual(['readers', 'wonderland-admins']);
    expect(tokens.refresh_token).toBeDefined();

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token ?? '');
    const again = refreshed.claims();
    expect(again).toMatchObject({
      sub: 'alice',
      aud: 'oidc-client',
      auth_time: claims?.['auth_time'],
    });
    expect(again?.['nonce']).toBeUndefined();
  });

  it("openid-client: a nonce that is not the request's is refused", async () => {
    const config = await rp();
    const { location, verifier, state } = await signIn(config, 'openid');
    const err: unknown = await client
      .authorizationCodeGrant(config, location, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: client.randomNonce(),
      })
      .catch((e: unknown) => e);
    // openid-client wraps oauth4webapi's error, whose cause names the claim.
    expect(err).toBeInstanceOf(client.ClientError);
    const cause = (err as Error).cause as Error & { code: string; cause: { claim: string } };
    expect(cause.code).toBe('OAUTH_JWT_CLAIM_COMPARISON_FAILED');
    expect(cause.cause.claim).toBe('nonce');
  });

  it('without offline_access an openid sign-in gets no refresh token; without groups no groups claim', async () => {
    const config = await rp();
    const { location, verifier, state, nonce } = await signIn(config, 'openid profile');
    const tokens = await client.authorizationCodeGrant(config, location, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    expect(tokens.refresh_token).toBeUndefined();
    expect(tokens.id_token).toBeDefined();
    expect(tokens.claims()?.['groups']).toBeUndefined();
    expect(tokens.claims()?.['email']).toBeUndefined();
    expect(decodeJwt(tokens.access_token)['groups']).toBeUndefined();
  });

  it('oauth4webapi: OIDC code flow with nonce and at_hash; id_token and access token are not interchangeable', async () => {
    const issuer = new URL(on.stack().issuer);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }),
    );
    const rpClient: oauth.Client = { client_id: 'oidc-client' };
    const verifier = oauth.generateRandomCodeVerifier();
    const nonce = oauth.generateRandomNonce();
    const url = new URL(as.authorization_endpoint ?? '');
    url.search = new URLSearchParams({
      client_id: rpClient.client_id,
      redirect_uri: on.stack().redirectUri,
      response_type: 'code',
      scope: 'openid email',
      nonce,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const { location } = await walk(url.toString());
    const params = oauth.validateAuthResponse(as, rpClient, location, oauth.expectNoState);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      rpClient,
      oauth.ClientSecretBasic(SECRETS.oidc),
      params,
      on.stack().redirectUri,
      verifier,
      insecure,
    );
    const tokens = await oauth.processAuthorizationCodeResponse(as, rpClient, response, {
      expectedNonce: nonce,
      requireIdToken: true,
    });
    const claims = oauth.getValidatedIdTokenClaims(tokens);
    expect(claims).toMatchObject({
      sub: 'alice',
      aud: 'oidc-client',
      email: 'alice@example.com',
      nonce,
    });
    expect(claims?.['at_hash']).toMatch(/^[A-Za-z0-9_-]{22}$/);

    // The id_token presented as an access token: refused by the resource server (typ, audience).
    const idAsAccess = await fetch(`${on.stack().userServiceUrl}/me`, {
      headers: { authorization: `Bearer ${tokens.id_token}` },
    });
    expect(idAsAccess.status).toBe(401);
    await expect(
      oauth.validateJwtAccessToken(
        as,
        new Request('http://rs.test/', { headers: { authorization: `Bearer ${tokens.id_token}` } }),
        AUDIENCE,
        insecure,
      ),
    ).rejects.toThrow();
    // The access token is not an id_token for this client: its aud is the resource server.
    expect(decodeJwt(tokens.access_token).aud).toBe(AUDIENCE);
    expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
  });
});

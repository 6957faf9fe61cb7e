// The flow end to end with independent clients, on both stores: oauth4webapi does discovery,
// PKCE, the code exchange and checks the token as an RFC 9068 JWT; the user service accepts it
// at /me; the specification's JSON token request (grant_type authorization_token) works.
import * as oauth from 'oauth4webapi';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, tokenRequest, walk } from '../harness/auth-flow.ts';
import { AUDIENCE, SECRETS } from '../harness/auth-stack.ts';

const insecure = { [oauth.allowInsecureRequests]: true };

describe.each(['memory', 'redis'] as const)(
  'sign-in with independent clients (%s store)',
  (store) => {
    const stack = perDescribe(async (start) => {
      const redis = store === 'redis' ? await start.redis() : undefined;
      return start.authStack({
        userService: true,
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
      });
    });

    it('oauth4webapi: discovery, PKCE authorization URL, code exchange; the token is accepted by /me', async () => {
      const issuer = new URL(stack.issuer);
      const as = await oauth.processDiscoveryResponse(
        issuer,
        await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
      );
      expect(as.code_challenge_methods_supported).toEqual(['S256']);
      expect(as.authorization_response_iss_parameter_supported).toBe(true);

      const client: oauth.Client = { client_id: 'basic-client' };
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint ?? '');
      url.search = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: stack.redirectUri,
        response_type: 'code',
        scope: 'profile email',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      }).toString();

      const { location, consentShown } = await walk(url.toString());
      expect(consentShown).toBe(true);
      // validateAuthResponse checks state and, because the metadata says so, iss (RFC 9207).
      const params = oauth.validateAuthResponse(as, client, location, state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(SECRETS.basic),
        params,
        stack.redirectUri,
        verifier,
        insecure,
      );
      expect(response.headers.get('cache-control')).toBe('no-store');
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
      expect(tokens.token_type).toBe('bearer');
      expect(tokens.scope).toBe('profile email');
      expect(tokens.refresh_token).toMatch(/^[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/);

      // The access token as an RFC 9068 JWT, checked by the library's resource-server validator.
      const claims = await oauth.validateJwtAccessToken(
        as,
        new Request(`${stack.userServiceUrl}/me`, {
          headers: { authorization: `Bearer ${tokens.access_token}` },
        }),
        AUDIENCE,
        insecure,
      );
      expect(claims).toMatchObject({
        sub: 'alice',
        client_id: 'basic-client',
        scope: 'profile email',
        iss: stack.issuer,
      });

      const me = await fetch(`${stack.userServiceUrl}/me`, {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      });
      expect(me.status).toBe(200);
      expect(await me.json()).toEqual({
        sub: 'alice',
        name: 'Alice Liddell',
        preferred_username: 'alice',
        email: 'alice@example.com',
        email_verified: true,
      });

      // Refresh with the library too: rotation gives a new refresh token.
      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(
          as,
          client,
          oauth.ClientSecretBasic(SECRETS.basic),
          tokens.refresh_token ?? '',
          insecure,
        ),
      );
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    });

    it("the specification's JSON token request with grant_type authorization_token returns a valid access token", async () => {
      const { location } = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
        state: 's1',
      });
      const code = location.searchParams.get('code') ?? '';
      expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/); // 256 bits
      expect(location.searchParams.get('state')).toBe('s1');
      expect(location.searchParams.get('iss')).toBe(stack.issuer);

      const res = await tokenRequest(
        stack.issuer,
        {
          client_id: 'demo-client',
          client_secret: SECRETS.post,
          redirect_uri: stack.redirectUri,
          grant_type: 'authorization_token',
          code,
        },
        { json: true },
      );
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.json).toMatchObject({ token_type: 'Bearer', expires_in: 300, scope: 'profile' });
      const token = String(res.json['access_token']);
      const [header] = token.split('.');
      expect(JSON.parse(Buffer.from(header ?? '', 'base64url').toString())).toMatchObject({
        alg: 'ES256',
        typ: 'at+jwt',
        kid: stack.keys.keys[0]?.kid,
      });
      const me = await fetch(`${stack.userServiceUrl}/me`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(me.status).toBe(200);
      expect(await me.json()).toMatchObject({ sub: 'alice', name: 'Alice Liddell' });
    });

    it('asks for consent only the first time, and again when new scopes are asked for', async () => {
      const first = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
        username: 'bob',
        password: 'builder',
      });
      expect(first.consentShown).toBe(true);
      const second = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
        username: 'bob',
        password: 'builder',
      });
      expect(second.consentShown).toBe(false);
      expect(second.location.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const wider = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
        username: 'bob',
        password: 'builder',
        scope: 'profile email',
      });
      expect(wider.consentShown).toBe(true);
    });
  },
);

// The error paths of the authorization server that matter, each asserting status and body, on the
// memory and on the Redis store.
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, browser, hidden, pkce, tokenRequest, trySignIn } from '../harness/auth-flow.ts';
import { SECRETS, type Stack } from '../harness/auth-stack.ts';

async function introspect(stack: Stack, token: string) {
  const res = await fetch(`${stack.issuer}/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token, client_id: 'demo-client', client_secret: SECRETS.post }),
  });
  return (await res.json()) as Record<string, unknown>;
}

describe.each(['memory', 'redis'] as const)(
  'authorization server error paths (%s store)',
  (store) => {
    const stack = perDescribe(async (start) => {
      const redis = store === 'redis' ? await start.redis() : undefined;
      return start.authStack(redis !== undefined ? { redisUrl: redis.url } : {});
    });

    const authUrl = (params: Record<string, string>) =>
      `${stack.issuer}/auth?${new URLSearchParams(params)}`;
    const base = () => ({
      client_id: 'demo-client',
      redirect_uri: stack.redirectUri,
      response_type: 'code',
      scope: 'profile',
      state: 'xyz',
    });
    const codeFor = async (clientId = 'demo-client', extra: { challenge?: string } = {}) => {
      const { location } = await authorize({
        issuer: stack.issuer,
        clientId,
        redirectUri: stack.redirectUri,
        ...extra,
      });
      const code = location.searchParams.get('code');
      if (code === null) throw new Error(`no code: ${location}`);
      return code;
    };
    const exchange = (code: string, extra: Record<string, string> = {}) =>
      tokenRequest(stack.issuer, {
        grant_type: 'authorization_code',
        code,
        redirect_uri: stack.redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
        ...extra,
      });

    describe('GET /auth', () => {
      it.each([
        ['an unregistered redirect_uri', { redirect_uri: 'https://evil.example/callback' }],
        ['a redirect_uri differing only by a trailing slash', { redirect_uri: 'REDIRECT/' }],
        ['a missing redirect_uri', { redirect_uri: '' }],
        ['an unknown client_id', { client_id: 'nobody' }],
      ])('%s shows an HTML error page and never redirects', async (_name, override) => {
        const params: Record<string, string> = { ...base(), ...override };
        if (params['redirect_uri'] === 'REDIRECT/')
          params['redirect_uri'] = `${stack.redirectUri}/`;
        const res = await fetch(authUrl(params), { redirect: 'manual' });
        expect(res.status).toBe(400);
        expect(res.headers.get('location')).toBeNull();
        expect(res.headers.get('content-type')).toMatch(/^text\/html/);
        expect(await res.text()).toMatch(/Invalid redirect address|Unknown application/);
      });

      it('a repeated client_id or redirect_uri is an error page, other repeated parameters an invalid_request redirect', async () => {
        const dupClient = await fetch(`${authUrl(base())}&client_id=demo-client`, {
          redirect: 'manual',
        });
        expect(dupClient.status).toBe(400);
        expect(dupClient.headers.get('location')).toBeNull();
        const dupScope = await fetch(`${authUrl(base())}&scope=email`, { redirect: 'manual' });
        expect(dupScope.status).toBe(303);
        const loc = new URL(dupScope.headers.get('location') ?? '');
        expect(loc.searchParams.get('error')).toBe('invalid_request');
        expect(loc.searchParams.get('error_description')).toContain('scope');
        expect(loc.searchParams.get('state')).toBe('xyz');
        expect(loc.searchParams.get('iss')).toBe(stack.issuer);
      });

      it('response_type other than code redirects with unsupported_response_type, state and iss', async () => {
        const res = await fetch(authUrl({ ...base(), response_type: 'token' }), {
          redirect: 'manual',
        });
        expect(res.status).toBe(303);
        const loc = new URL(res.headers.get('location') ?? '');
        expect(`${loc.origin}${loc.pathname}`).toBe(stack.redirectUri);
        expect(Object.fromEntries(loc.searchParams)).toMatchObject({
          error: 'unsupported_response_type',
          state: 'xyz',
          iss: stack.issuer,
        });
      });

      it('refuses PKCE plain, and a public client without PKCE', async () => {
        const plain = await fetch(
          authUrl({ ...base(), code_challenge: pkce().challenge, code_challenge_method: 'plain' }),
          { redirect: 'manual' },
        );
        expect(new URL(plain.headers.get('location') ?? '').searchParams.get('error')).toBe(
          'invalid_request',
        );
        const pub = await fetch(authUrl({ ...base(), client_id: 'public-client' }), {
          redirect: 'manual',
        });
        expect(
          new URL(pub.headers.get('location') ?? '').searchParams.get('error_description'),
        ).toContain('PKCE');
      });

      it('script in state and in reflected error fields is encoded in the redirect, escaped on pages', async () => {
        const evil = '<script>alert(1)</script>"\'';
        const res = await fetch(
          authUrl({ ...base(), scope: `profile ${evil.replace(/[ ]/g, '')}`, state: evil }),
          { redirect: 'manual' },
        );
        const location = res.headers.get('location') ?? '';
        expect(location).not.toMatch(/[<>"']/);
        const loc = new URL(location);
        expect(loc.searchParams.get('state')).toBe(evil);
        expect(loc.searchParams.get('error')).toBe('invalid_scope');
        // The client's display name "Demo <Client>" is escaped on the sign-in page.
        const page = await (await fetch(authUrl(base()))).text();
        expect(page).toContain('Demo &lt;Client&gt;');
        expect(page).not.toContain('<Client>');
      });

      it('every HTML page carries the security headers', async () => {
        const res = await fetch(authUrl(base()));
        expect(res.headers.get('content-security-policy')).toMatch(
          /default-src 'none'.*frame-ancestors 'none'/,
        );
        expect(res.headers.get('content-security-policy')).not.toContain('script-src');
        expect(res.headers.get('x-frame-options')).toBe('DENY');
        expect(res.headers.get('referrer-policy')).toBe('no-referrer');
        expect(res.headers.get('cache-control')).toBe('no-store');
        const error = await fetch(authUrl({ ...base(), client_id: 'nobody' }));
        expect(error.headers.get('x-frame-options')).toBe('DENY');
      });
    });

    describe('sign-in and consent forms', () => {
      it('a missing or wrong CSRF token is refused with 403 and nothing is issued', async () => {
        const b = browser();
        const page = await (await b.get(authUrl(base()))).text();
        const interaction = hidden(page, 'interaction') ?? '';
        const missing = await b.post(`${stack.issuer}/auth/sign-in`, {
          interaction,
          username: 'alice',
          password: 'wonderland',
        });
        expect(missing.status).toBe(403);
        expect(await missing.text()).toContain('CSRF');
        const wrong = await b.post(`${stack.issuer}/auth/sign-in`, {
          interaction,
          csrf: 'x'.repeat(43),
          username: 'alice',
          password: 'wonderland',
        });
        expect(wrong.status).toBe(403);
        // The form from another browser (no binding cookie) is refused too.
        const other = await browser().post(`${stack.issuer}/auth/sign-in`, {
          interaction,
          csrf: hidden(page, 'csrf') ?? '',
          username: 'alice',
          password: 'wonderland',
        });
        expect(other.status).toBe(403);
      });

      it('a wrong password shows the sign-in page again with an error (303, then 200)', async () => {
        const b = browser();
        const page = await (await b.get(authUrl(base()))).text();
        const res = await b.post(`${stack.issuer}/auth/sign-in`, {
          interaction: hidden(page, 'interaction') ?? '',
          csrf: hidden(page, 'csrf') ?? '',
          username: 'alice',
          password: 'nope',
        });
        expect(res.status).toBe(303);
        const again = await b.get(
          new URL(res.headers.get('location') ?? '', stack.issuer).toString(),
        );
        expect(again.status).toBe(200);
        expect(await again.text()).toContain('The username or password is not correct.');
      });

      it('Deny redirects with error=access_denied, state and iss', async () => {
        const { location } = await authorize({
          issuer: stack.issuer,
          clientId: 'other-client',
          redirectUri: stack.redirectUri,
          state: 'd1',
          decision: 'deny',
          username: 'bob',
          password: 'builder',
        });
        expect(Object.fromEntries(location.searchParams)).toMatchObject({
          error: 'access_denied',
          state: 'd1',
          iss: stack.issuer,
        });
      });
    });

    describe('POST /token', () => {
      it('a reused code fails with invalid_grant and revokes what the first exchange issued', async () => {
        const code = await codeFor();
        const first = await exchange(code);
        expect(first.status).toBe(200);
        const again = await exchange(code);
        expect(again.status).toBe(400);
        expect(again.json).toEqual({
          error: 'invalid_grant',
          error_description: 'the authorization code was already used',
        });
        const refreshed = await tokenRequest(stack.issuer, {
          grant_type: 'refresh_token',
          refresh_token: String(first.json['refresh_token']),
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(refreshed.status).toBe(400);
        expect(refreshed.json['error']).toBe('invalid_grant');
        expect(await introspect(stack, String(first.json['access_token']))).toEqual({
          active: false,
        });
      });

      it("another client's code is invalid_grant", async () => {
        const code = await codeFor('other-client');
        const res = await exchange(code);
        expect(res.status).toBe(400);
        expect(res.json).toEqual({
          error: 'invalid_grant',
          error_description: 'the authorization code was issued to another client',
        });
      });

      it('a wrong redirect_uri at the token endpoint is invalid_grant', async () => {
        const res = await exchange(await codeFor(), { redirect_uri: `${stack.redirectUri}?x=1` });
        expect(res.json['error']).toBe('invalid_grant');
      });

      it('a wrong secret is 401 invalid_client; with Basic the 401 carries WWW-Authenticate', async () => {
        const body = await exchange(await codeFor(), { client_secret: 'wrong' });
        expect(body.status).toBe(401);
        expect(body.json).toEqual({
          error: 'invalid_client',
          error_description: 'client authentication failed',
        });
        const basic = await tokenRequest(
          stack.issuer,
          {
            grant_type: 'authorization_code',
            code: await codeFor('basic-client'),
            redirect_uri: stack.redirectUri,
          },
          { basic: ['basic-client', 'wrong'] },
        );
        expect(basic.status).toBe(401);
        expect(basic.headers.get('www-authenticate')).toMatch(/^Basic realm="portcullis"/);
        expect(basic.json['error']).toBe('invalid_client');
      });

      it('PKCE: a missing or wrong code_verifier is invalid_grant; the right one works', async () => {
        const p = pkce();
        expect(
          (await exchange(await codeFor('demo-client', { challenge: p.challenge }))).json,
        ).toEqual({
          error: 'invalid_grant',
          error_description: 'code_verifier is required (PKCE)',
        });
        const wrong = await exchange(await codeFor('demo-client', { challenge: p.challenge }), {
          code_verifier: pkce().verifier,
        });
        expect(wrong.json).toEqual({
          error: 'invalid_grant',
          error_description: 'code_verifier does not match the code_challenge',
        });
        const right = await exchange(await codeFor('demo-client', { challenge: p.challenge }), {
          code_verifier: p.verifier,
        });
        expect(right.status).toBe(200);
      });

      it('a code_verifier sent without a challenge is invalid_grant (RFC 9700 2.1.1)', async () => {
        const res = await exchange(await codeFor(), { code_verifier: pkce().verifier });
        expect(res.status).toBe(400);
        expect(res.json).toEqual({
          error: 'invalid_grant',
          error_description:
            'code_verifier sent but the authorization request had no code_challenge',
        });
      });

      it('duplicate parameters, unknown grant types and bad bodies are RFC 6749 errors, never 500', async () => {
        const dup = await fetch(`${stack.issuer}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `grant_type=authorization_code&code=a&code=b&redirect_uri=${encodeURIComponent(stack.redirectUri)}&client_id=demo-client&client_secret=${SECRETS.post}`,
        });
        expect(dup.status).toBe(400);
        expect(await dup.json()).toEqual({
          error: 'invalid_request',
          error_description: 'parameter repeated: code',
        });
        const grant = await tokenRequest(stack.issuer, {
          grant_type: 'password',
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(grant.json['error']).toBe('unsupported_grant_type');
        for (const [type, body] of [
          ['application/json', '{"grant_type":'],
          ['application/json', '{"grant_type":["a"],"code":1}'],
          ['text/plain', 'hello'],
        ] as const) {
          const res = await fetch(`${stack.issuer}/token`, {
            method: 'POST',
            headers: { 'content-type': type },
            body,
          });
          expect(res.status).toBe(400);
          expect(((await res.json()) as { error: string }).error).toBe('invalid_request');
        }
      });

      it('refresh: rotation on every use; reusing an old token revokes the whole family', async () => {
        const first = await exchange(await codeFor());
        const r1 = String(first.json['refresh_token']);
        const second = await tokenRequest(stack.issuer, {
          grant_type: 'refresh_token',
          refresh_token: r1,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(second.status).toBe(200);
        const r2 = String(second.json['refresh_token']);
        expect(r2).not.toBe(r1);
        const reuse = await tokenRequest(stack.issuer, {
          grant_type: 'refresh_token',
          refresh_token: r1,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(reuse.status).toBe(400);
        expect(reuse.json).toEqual({
          error: 'invalid_grant',
          error_description: 'the refresh token was already used; the grant is revoked',
        });
        const afterReuse = await tokenRequest(stack.issuer, {
          grant_type: 'refresh_token',
          refresh_token: r2,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(afterReuse.json['error']).toBe('invalid_grant');
        expect(await introspect(stack, String(second.json['access_token']))).toEqual({
          active: false,
        });
        expect(await introspect(stack, String(first.json['access_token']))).toEqual({
          active: false,
        });
      });
    });

    describe('introspection and revocation', () => {
      it('introspection describes live tokens; revocation makes them inactive', async () => {
        const t = await exchange(await codeFor());
        const access = String(t.json['access_token']);
        const refresh = String(t.json['refresh_token']);
        expect(await introspect(stack, access)).toMatchObject({
          active: true,
          token_type: 'Bearer',
          sub: 'alice',
          client_id: 'demo-client',
          scope: 'profile',
          iss: stack.issuer,
        });
        expect(await introspect(stack, refresh)).toMatchObject({
          active: true,
          token_type: 'refresh_token',
          sub: 'alice',
        });
        expect(await introspect(stack, 'garbage')).toEqual({ active: false });

        const revoke = (token: string, secret = SECRETS.post) =>
          fetch(`${stack.issuer}/revoke`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ token, client_id: 'demo-client', client_secret: secret }),
          });
        expect((await revoke(access, 'wrong')).status).toBe(401);
        expect((await revoke(access)).status).toBe(200);
        expect(await introspect(stack, access)).toEqual({ active: false });
        expect((await revoke(refresh)).status).toBe(200);
        expect(await introspect(stack, refresh)).toEqual({ active: false });
        expect((await revoke('not-a-token')).status).toBe(200);
        const refreshed = await tokenRequest(stack.issuer, {
          grant_type: 'refresh_token',
          refresh_token: refresh,
          client_id: 'demo-client',
          client_secret: SECRETS.post,
        });
        expect(refreshed.json['error']).toBe('invalid_grant');
      });
    });
  },
);

describe('limits that need their own settings', () => {
  const stack = perDescribe((start) =>
    start.authStack({
      authEnv: {
        AUTH_CODE_TTL_SECONDS: '1',
        AUTH_SIGNIN_USER_BURST: '3',
        AUTH_SIGNIN_USER_PER_MINUTE: '1',
      },
    }),
  );

  it('an expired code is invalid_grant', async () => {
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const issuedAt = Date.now();
    await new Promise((r) => setTimeout(r, Math.max(0, issuedAt + 1200 - Date.now())));
    const res = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      error: 'invalid_grant',
      error_description: 'the authorization code is invalid or expired',
    });
  });

  it('sign-in is throttled per username: the 4th attempt within the burst of 3 gets 429 with Retry-After', async () => {
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 4; i++) {
      const res = await trySignIn(stack.issuer, stack.redirectUri, 'bob', 'wrong');
      statuses.push(res.status);
      if (res.status === 429) {
        retryAfter = res.headers.get('retry-after');
        expect(await res.text()).toContain('Too many sign-in attempts');
      }
    }
    // One attempt per minute refills: the first three (burst) pass to the password check, the 4th waits ~60 s.
    expect(statuses).toEqual([303, 303, 303, 429]);
    expect(Number(retryAfter)).toBeGreaterThan(50);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    // Another username from the same address is not affected by bob's bucket.
    const ok = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    expect(ok.location.searchParams.get('code')).not.toBeNull();
  });
});

describe('sign-in throttling per client address', () => {
  // Behind a trusted proxy the client address comes from X-Forwarded-For.
  const stack = perDescribe((start) =>
    start.authStack({
      authEnv: {
        AUTH_SIGNIN_ADDRESS_BURST: '2',
        AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1',
        AUTH_TRUST_PROXY: 'true',
      },
    }),
  );

  const attempt = async (username: string, address: string) =>
    (
      await trySignIn(stack.issuer, stack.redirectUri, username, 'guess', {
        'x-forwarded-for': address,
      })
    ).status;

  it('guessing across usernames from one address is limited; another address is not', async () => {
    expect([
      await attempt('alice', '203.0.113.7'),
      await attempt('bob', '203.0.113.7'),
      await attempt('carol', '203.0.113.7'),
    ]).toEqual([303, 303, 429]);
    expect(await attempt('dave', '203.0.113.8')).toBe(303);
  });
});

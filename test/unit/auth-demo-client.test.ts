// The demo client in process with a stub OAuth client: state and iss are checked, and the error
// fields of the callback are shown escaped.
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/demo-client/app.ts';
import type { OAuthClient } from '../../services/demo-client/oauth.ts';

const ISSUER = 'https://id.example.com';

async function startLogin() {
  const oauth: OAuthClient = {
    metadata: async () => ({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/auth`,
      token_endpoint: `${ISSUER}/token`,
      jwks_uri: `${ISSUER}/jwks.json`,
    }),
    start: async () => ({ url: `${ISSUER}/auth?state=S`, pending: { state: 'S', verifier: 'V' } }),
    exchange: async () => {
      throw new Error('not in this test');
    },
    verify: async () => ({}),
    verifyIdToken: async () => ({}),
  };
  const app = await buildApp({
    oauth,
    issuer: ISSUER,
    meUrl: 'http://127.0.0.1:1/me',
    now: () => Date.now(),
  });
  const login = await app.inject({ method: 'POST', url: '/login' });
  expect(login.statusCode).toBe(303);
  expect(login.headers['location']).toBe(`${ISSUER}/auth?state=S`);
  expect(login.headers['content-security-policy']).toBeUndefined();
  const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
  return { app, cookie };
}

describe('demo client callback', () => {
  it('shows error fields escaped', async () => {
    const { app, cookie } = await startLogin();
    const q = new URLSearchParams({
      state: 'S',
      iss: ISSUER,
      error: '<script>alert(1)</script>',
      error_description: '<img src=x onerror=alert(2)>',
    });
    const res = await app.inject({ method: 'GET', url: `/callback?${q}`, headers: { cookie } });
    expect(res.body).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(res.body).toContain('&lt;img src=x onerror=alert(2)&gt;');
    expect(res.body).not.toMatch(/<script|<img/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
  });

  it('shows access_denied', async () => {
    const { app, cookie } = await startLogin();
    const res = await app.inject({
      method: 'GET',
      url: `/callback?${new URLSearchParams({ state: 'S', iss: ISSUER, error: 'access_denied' })}`,
      headers: { cookie },
    });
    expect(res.body).toContain('<code id="oauth-error">access_denied</code>');
  });

  it('refuses a response with another state or issuer', async () => {
    const a = await startLogin();
    const badState = await a.app.inject({
      method: 'GET',
      url: `/callback?${new URLSearchParams({ state: 'X', iss: ISSUER, code: 'c' })}`,
      headers: { cookie: a.cookie },
    });
    expect(badState.statusCode).toBe(400);
    expect(badState.body).toContain('state_mismatch');
    const b = await startLogin();
    const badIss = await b.app.inject({
      method: 'GET',
      url: `/callback?${new URLSearchParams({ state: 'S', iss: 'https://evil.example', code: 'c' })}`,
      headers: { cookie: b.cookie },
    });
    expect(badIss.statusCode).toBe(400);
    expect(badIss.body).toContain('issuer_mismatch');
  });
});

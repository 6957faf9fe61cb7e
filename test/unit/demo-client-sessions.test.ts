// The demo client's server-side sessions: they expire by the injected clock (30 min), never by a
// clock read inside the app, and signing in moves the session to a new id (session fixation).
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/demo-client/app.ts';
import type { OAuthClient } from '../../services/demo-client/oauth.ts';

const ISSUER = 'https://id.example.com';

async function setup(meUrl = 'http://127.0.0.1:1/me') {
  let t = 1_700_000_000_000;
  const oauth: OAuthClient = {
    metadata: async () => ({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/auth`,
      token_endpoint: `${ISSUER}/token`,
      jwks_uri: `${ISSUER}/jwks.json`,
    }),
    start: async () => ({ url: `${ISSUER}/auth?state=S`, pending: { state: 'S', verifier: 'V' } }),
    exchange: async () => ({ access_token: 'at', token_type: 'Bearer', scope: 'profile' }),
    verify: async () => ({ sub: 'alice' }),
    verifyIdToken: async () => ({ sub: 'alice' }),
  };
  const app = await buildApp({ oauth, issuer: ISSUER, meUrl, now: () => t });
  const login = await app.inject({ method: 'POST', url: '/login' });
  const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
  const callback = (headers: Record<string, string>) =>
    app.inject({
      method: 'GET',
      url: `/callback?${new URLSearchParams({ state: 'S', iss: ISSUER, code: 'c' })}`,
      headers,
    });
  return { app, cookie, callback, advance: (ms: number) => (t += ms) };
}

describe('demo client sessions', () => {
  it('expire after 30 minutes of the injected clock', async () => {
    const s = await setup();
    s.advance(30 * 60_000 + 1);
    const res = await s.callback({ cookie: s.cookie });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('state_mismatch');
  });
});

describe('demo client sign-in', () => {
  it('moves the session to a new id, so a cookie planted before sign-in does not see the profile', async () => {
    const me = Fastify();
    me.get('/me', async () => ({ sub: 'alice', name: 'Alice' }));
    const meUrl = `${await me.listen({ port: 0, host: '127.0.0.1' })}/me`;
    try {
      const s = await setup(meUrl);
      const res = await s.callback({ cookie: s.cookie });
      expect(res.statusCode).toBe(303);
      const next = String(res.headers['set-cookie']).split(';')[0] ?? '';
      expect(next).toMatch(/^demo_session=/);
      expect(next).not.toBe(s.cookie);
      const signedIn = await s.app.inject({ method: 'GET', url: '/', headers: { cookie: next } });
      expect(signedIn.body).toContain('id="profile-name">Alice<');
      const planted = await s.app.inject({
        method: 'GET',
        url: '/',
        headers: { cookie: s.cookie },
      });
      expect(planted.body).not.toContain('Alice');
      expect(planted.body).toContain('id="sign-in"');
    } finally {
      await me.close();
    }
  });
});

describe('demo client pages without a session', () => {
  it('create none: only POST /login starts a session (page views and stray callbacks cost no memory)', async () => {
    const s = await setup();
    for (const url of [
      '/',
      `/callback?${new URLSearchParams({ state: 'S', iss: ISSUER, code: 'c' })}`,
    ]) {
      const res = await s.app.inject({ method: 'GET', url });
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const logout = await s.app.inject({ method: 'POST', url: '/logout' });
    expect(logout.statusCode).toBe(303);
    expect(logout.headers['set-cookie']).toBeUndefined();
    const home = await s.app.inject({ method: 'GET', url: '/', headers: { cookie: s.cookie } });
    expect(home.statusCode).toBe(200);
    expect(home.headers['set-cookie']).toBeUndefined();
  });
});

// The demo client's server-side sessions: they expire by the injected clock (30 min), never by a
// clock read inside the app.
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/demo-client/app.ts';
import type { OAuthClient } from '../../services/demo-client/oauth.ts';

const ISSUER = 'https://id.example.com';

async function setup() {
  let t = 1_700_000_000_000;
  const oauth: OAuthClient = {
    metadata: async () => ({ issuer: ISSUER, authorization_endpoint: `${ISSUER}/auth`, token_endpoint: `${ISSUER}/token`, jwks_uri: `${ISSUER}/jwks.json` }),
    start: async () => ({ url: `${ISSUER}/auth?state=S`, pending: { state: 'S', verifier: 'V' } }),
    exchange: async () => ({ access_token: 'at', token_type: 'Bearer', scope: 'profile' }),
    verify: async () => ({ sub: 'alice' }),
  };
  const app = await buildApp({ oauth, issuer: ISSUER, meUrl: 'http://127.0.0.1:1/me', now: () => t });
  const login = await app.inject({ method: 'POST', url: '/login' });
  const cookie = String(login.headers['set-cookie']).split(';')[0] ?? '';
  const callback = (headers: Record<string, string>) =>
    app.inject({ method: 'GET', url: `/callback?${new URLSearchParams({ state: 'S', iss: ISSUER, code: 'c' })}`, headers });
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

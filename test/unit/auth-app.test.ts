// The auth server app in process (fastify inject, memory stores, fake clock): the consents page
// (list and revoke), metadata, the access token's RFC 9068 shape and its verification by the
// user service's /me verifier.
import { createLocalJWKSet, decodeProtectedHeader } from 'jose';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../services/auth-server/app.ts';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import type { ClientRegistry } from '../../lib/config/client-registry.ts';
import type { UsersFile } from '../../lib/config/users-file.ts';
import {
  createClientAuthThrottle,
  defaultClientAuthLimits,
} from '../../services/auth-server/client-auth-throttle.ts';
import type { AuthContext } from '../../services/auth-server/context.ts';
import { createKeyRing } from '../../services/auth-server/key-ring.ts';
import { AuthMetrics } from '../../services/auth-server/metrics.ts';
import { createPasswordGate } from '../../services/auth-server/password-gate.ts';
import { hashPassword } from '../../lib/config/passwords.ts';
import { createDirectory } from '../../services/auth-server/registry.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import { createMemoryStores } from '../../services/auth-server/stores/memory.ts';
import { createAccessTokenVerifier } from '../../services/user-service/routes/me.ts';

const ISSUER = 'https://id.example.com';
const REDIRECT = 'https://app.example.com/cb';

async function setup() {
  let t = Date.now();
  const now = () => t;
  const clients: ClientRegistry = {
    clients: [
      {
        client_id: 'app',
        client_secret_hash: hashClientSecret('s3cret'),
        display_name: 'App',
        redirect_uris: [REDIRECT],
        scopes: ['profile'],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
  };
  const users: UsersFile = {
    users: [
      {
        username: 'alice',
        password_hash: await hashPassword('wonderland', { ln: 10, r: 8, p: 1 }),
        profile: { name: 'Alice' },
      },
    ],
  };
  const keys = await generateSigningJwks();
  const ctx: AuthContext = {
    settings: {
      issuer: ISSUER,
      audience: 'urn:rs',
      accessTokenTtlSeconds: 300,
      refreshTokenTtlSeconds: 3600,
      refreshFamilyMaxAgeSeconds: 30 * 86_400,
      refreshReuseGraceSeconds: 0,
      codeTtlSeconds: 60,
      interactionTtlSeconds: 600,
    },
    directory: createDirectory({ current: () => clients }, { current: () => users }),
    keys: createKeyRing(() => keys),
    stores: createMemoryStores(now),
    throttle: { attempt: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
    clientAuthThrottle: createClientAuthThrottle(defaultClientAuthLimits, now),
    passwordGate: createPasswordGate({ concurrency: 2, queue: 16 }),
    metrics: new AuthMetrics({ defaultMetrics: false }),
    now,
    secureCookies: true,
  };
  const app = await buildApp({ ctx });
  const cookies = new Map<string, string>();
  const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res: { headers: Record<string, unknown> }) => {
    const set = res.headers['set-cookie'];
    for (const c of Array.isArray(set) ? set : typeof set === 'string' ? [set] : []) {
      const [pair] = String(c).split(';');
      const [k, v] = (pair ?? '').split('=');
      if (k !== undefined && v !== undefined) cookies.set(k, v);
    }
  };
  const get = async (url: string) => {
    const res = await app.inject({ method: 'GET', url, headers: { cookie: jar() } });
    keep(res);
    return res;
  };
  const post = async (url: string, form: Record<string, string>) => {
    const res = await app.inject({
      method: 'POST',
      url,
      headers: { cookie: jar(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
    keep(res);
    return res;
  };
  return { app, ctx, keys, get, post, advance: (ms: number) => (t += ms) };
}

const field = (body: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]*)"`).exec(body)?.[1] ?? '';

describe('auth server app', () => {
  let s: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => {
    s = await setup();
  });

  async function signInAndAllow(): Promise<string> {
    const page = await s.get(
      `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', scope: 'profile', state: 'st' })}`,
    );
    // The browser-binding cookie is set once per browser, Secure because the issuer is https.
    if (page.headers['set-cookie'] !== undefined)
      expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Lax; Secure/);
    const signIn = await s.post('/auth/sign-in', {
      interaction: field(page.body, 'interaction'),
      csrf: field(page.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    let location = String(signIn.headers['location']);
    if (location.startsWith('/auth/consent')) {
      const consent = await s.get(location);
      expect(consent.headers['content-security-policy']).toContain(
        "form-action 'self' https://app.example.com",
      );
      const allowed = await s.post('/auth/consent', {
        interaction: field(consent.body, 'interaction'),
        csrf: field(consent.body, 'csrf'),
        decision: 'allow',
      });
      location = String(allowed.headers['location']);
    }
    const url = new URL(location);
    expect(url.searchParams.get('iss')).toBe(ISSUER);
    return url.searchParams.get('code') ?? '';
  }

  it('over https every cookie is __Host- prefixed: Secure, Path=/, no Domain', async () => {
    const page = await s.get(
      `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', scope: 'profile', state: 'st' })}`,
    );
    const signIn = await s.post('/auth/sign-in', {
      interaction: field(page.body, 'interaction'),
      csrf: field(page.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    const account = await s.get('/consents');
    const set = [signIn, account].flatMap((r) => {
      const h = r.headers['set-cookie'];
      return Array.isArray(h) ? h.map(String) : h === undefined ? [] : [String(h)];
    });
    expect(set.length).toBeGreaterThanOrEqual(2);
    for (const cookie of set) {
      expect(cookie).toMatch(/^__Host-portcullis_(browser|account)=/);
      expect(cookie).toMatch(/; Path=\/(;|$)/);
      expect(cookie).toMatch(/; Secure/);
      expect(cookie).not.toMatch(/Domain=/i);
    }
  });

  it('stores nothing for anonymous visitors (pages, failed sign-ins); a sealed interaction cannot be altered', async () => {
    const st = s.ctx.stores;
    const writes = [
      vi.spyOn(st.interactions, 'put'),
      vi.spyOn(st.codes, 'put'),
      vi.spyOn(st.refresh, 'create'),
      vi.spyOn(st.consents, 'grant'),
      vi.spyOn(st.revoked, 'revoke'),
    ];
    const authUrl = `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', scope: 'profile', state: 'st' })}`;
    let page = await s.app.inject({ method: 'GET', url: authUrl });
    for (let i = 0; i < 50; i++) {
      page = await s.app.inject({ method: 'GET', url: authUrl });
      expect(page.statusCode).toBe(200);
      expect((await s.app.inject({ method: 'GET', url: '/consents' })).statusCode).toBe(200);
    }
    const cookie = String(page.headers['set-cookie']).split(';')[0] ?? '';
    const form = { interaction: field(page.body, 'interaction'), csrf: field(page.body, 'csrf') };
    const submit = (extra: Record<string, string>) =>
      s.app.inject({
        method: 'POST',
        url: '/auth/sign-in',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ ...form, ...extra }).toString(),
      });
    const failed = await submit({ username: 'alice', password: 'wrong' });
    expect(failed.statusCode).toBe(303);
    expect(String(failed.headers['location'])).toMatch(/^\/auth\/sign-in\?interaction=/);
    for (const spy of writes) expect(spy).not.toHaveBeenCalled();

    // One character changed anywhere in the sealed interaction: refused as expired, nothing stored.
    const sealed = form.interaction;
    const at = sealed.length - 30;
    const altered = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    const tampered = await submit({
      interaction: altered,
      username: 'alice',
      password: 'wonderland',
    });
    expect(tampered.statusCode).toBe(400);
    expect(tampered.body).toContain('This page has expired');
    for (const spy of writes) expect(spy).not.toHaveBeenCalled();

    // A successful sign-in is what creates state: the interaction moves to the server.
    const ok = await submit({ username: 'alice', password: 'wonderland' });
    expect(ok.statusCode).toBe(303);
    expect(
      (writes[0]?.mock.calls.length ?? 0) + (writes[1]?.mock.calls.length ?? 0),
    ).toBeGreaterThan(0);
    for (const spy of writes) spy.mockRestore();
  });

  it('metadata advertises RFC 8414 fields, S256 only and RFC 9207 iss', async () => {
    const res = await s.get('/.well-known/oauth-authorization-server');
    expect(res.json()).toMatchObject({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/auth`,
      token_endpoint: `${ISSUER}/token`,
      jwks_uri: `${ISSUER}/jwks.json`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('issues an RFC 9068 access token that the /me verifier accepts, and rejects it for another audience', async () => {
    const code = await signInAndAllow();
    const res = await s.app.inject({
      method: 'POST',
      url: '/token',
      payload: {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT,
        client_id: 'app',
        client_secret: 's3cret',
      },
    });
    expect(res.statusCode).toBe(200);
    const token = String(res.json().access_token);
    expect(decodeProtectedHeader(token)).toEqual({
      alg: 'ES256',
      kid: s.keys.keys[0]?.kid,
      typ: 'at+jwt',
    });
    const jwks = createLocalJWKSet(s.ctx.keys.publicJwks());
    const ok = await createAccessTokenVerifier(
      { issuer: ISSUER, audience: 'urn:rs', jwksUrl: 'unused' },
      jwks,
    )(token);
    expect(ok.ok && ok.claims).toMatchObject({
      iss: ISSUER,
      sub: 'alice',
      aud: 'urn:rs',
      client_id: 'app',
      scope: 'profile',
      name: 'Alice',
    });
    const other = await createAccessTokenVerifier(
      { issuer: ISSUER, audience: 'urn:other', jwksUrl: 'unused' },
      jwks,
    )(token);
    expect(other.ok).toBe(false);
  });

  it('the consents page lists the stored consent; revoking it asks for consent again and revokes refresh tokens', async () => {
    const code = await signInAndAllow();
    const tokens = (
      await s.app.inject({
        method: 'POST',
        url: '/token',
        payload: {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT,
          client_id: 'app',
          client_secret: 's3cret',
        },
      })
    ).json();
    const signInPage = await s.get('/consents');
    expect(signInPage.body).toContain('manage the applications');
    const signedIn = await s.post('/consents/sign-in', {
      csrf: field(signInPage.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    expect(signedIn.statusCode).toBe(303);
    const list = await s.get('/consents');
    expect(list.body).toContain('data-client-id="app"');
    const revoked = await s.post('/consents/revoke', {
      csrf: field(list.body, 'csrf'),
      client_id: 'app',
    });
    expect(revoked.statusCode).toBe(303);
    expect((await s.get('/consents')).body).toContain('No application has access');
    const refresh = await s.app.inject({
      method: 'POST',
      url: '/token',
      payload: {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: 'app',
        client_secret: 's3cret',
      },
    });
    expect(refresh.json()).toMatchObject({ error: 'invalid_grant' });
    // The next authorization asks for consent again.
    const page = await s.get(
      `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code' })}`,
    );
    const again = await s.post('/auth/sign-in', {
      interaction: field(page.body, 'interaction'),
      csrf: field(page.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    expect(String(again.headers['location'])).toMatch(/^\/auth\/consent/);
  });

  it('revoking without the CSRF token is refused', async () => {
    const res = await s.post('/consents/revoke', { client_id: 'app' });
    expect(res.statusCode).toBe(403);
  });

  it("revoking a client id this server does not register is refused and touches no store (another namespace's client, or none)", async () => {
    const first = await s.get('/consents');
    if (first.body.includes('manage the applications'))
      await s.post('/consents/sign-in', {
        csrf: field(first.body, 'csrf'),
        username: 'alice',
        password: 'wonderland',
      });
    const list = await s.get('/consents');
    const revoke = vi.spyOn(s.ctx.stores.consents, 'revoke');
    const families = vi.spyOn(s.ctx.stores.refresh, 'familiesOf');
    try {
      for (const clientId of ['other-teams-app', 'never-registered']) {
        const res = await s.post('/consents/revoke', {
          csrf: field(list.body, 'csrf'),
          client_id: clientId,
        });
        expect(res.statusCode).toBe(400);
        expect(res.body).toContain('not registered here');
      }
      expect(revoke).not.toHaveBeenCalled();
      expect(families).not.toHaveBeenCalled();
    } finally {
      revoke.mockRestore();
      families.mockRestore();
    }
  });

  it('an interaction expires with its TTL', async () => {
    const page = await s.get(
      `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code' })}`,
    );
    s.advance(600_001);
    const res = await s.post('/auth/sign-in', {
      interaction: field(page.body, 'interaction'),
      csrf: field(page.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('This page has expired');
  });
});

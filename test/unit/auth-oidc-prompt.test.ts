// OpenID Connect request parameters in process: prompt (none, login, consent), max_age,
// login_hint, unknown parameters ignored, and the errors sent back on the redirect.
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../services/auth-server/app.ts';
import type { RegisteredClient } from '../../lib/config/client-registry.ts';
import type { AuthContext } from '../../services/auth-server/context.ts';
import { REDIRECT, app, context } from './auth-oidc-context.ts';

/** Users removed from the users file meanwhile (the directory stops knowing them). */
const gone = new Set<string>();

async function setup(client: RegisteredClient = app, sessions = false) {
  const base = await context('ES256', client);
  const ctx: AuthContext = {
    ...base,
    settings: {
      ...base.settings,
      ...(sessions ? { sessions: { idleSeconds: 600, maxAgeSeconds: 3600 } } : {}),
    },
    directory: {
      ...base.directory,
      user: (u) => (gone.has(u) ? undefined : base.directory.user(u)),
    },
  };
  const server = await buildApp({ ctx });
  const cookies = new Map<string, string>();
  const jar = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (res: { headers: Record<string, unknown> }) => {
    const set = res.headers['set-cookie'];
    for (const c of Array.isArray(set) ? set : typeof set === 'string' ? [set] : []) {
      const [k, v] = (String(c).split(';')[0] ?? '').split('=');
      if (k !== undefined && v !== undefined) cookies.set(k, v);
    }
  };
  const get = async (url: string) => {
    const res = await server.inject({ method: 'GET', url, headers: { cookie: jar() } });
    keep(res);
    return res;
  };
  const post = async (url: string, form: Record<string, string>) => {
    const res = await server.inject({
      method: 'POST',
      url,
      headers: { cookie: jar(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams(form).toString(),
    });
    keep(res);
    return res;
  };
  return { get, post, cookies };
}

const field = (body: string, name: string) =>
  new RegExp(`name="${name}" value="([^"]*)"`).exec(body)?.[1] ?? '';
const authUrl = (extra: Record<string, string>) =>
  `/auth?${new URLSearchParams({ client_id: 'app', redirect_uri: REDIRECT, response_type: 'code', scope: 'openid', state: 'st', ...extra })}`;
const redirectError = (res: { statusCode: number; headers: Record<string, unknown> }) => {
  expect(res.statusCode).toBe(303);
  const url = new URL(String(res.headers['location']));
  expect(url.origin + url.pathname).toBe(REDIRECT);
  expect(url.searchParams.get('state')).toBe('st');
  return url.searchParams.get('error');
};

describe('OpenID Connect authorization parameters', () => {
  it('prompt=none is answered login_required on the redirect (every authorization signs in)', async () => {
    const s = await setup();
    expect(redirectError(await s.get(authUrl({ prompt: 'none' })))).toBe('login_required');
  });

  it.each([
    ['prompt none with login', { prompt: 'none login' }],
    ['an unknown prompt value', { prompt: 'sideways' }],
    ['a max_age that is not a number', { max_age: '-1' }],
  ])('%s is invalid_request on the redirect', async (_name, extra) => {
    const s = await setup();
    expect(redirectError(await s.get(authUrl(extra)))).toBe('invalid_request');
  });

  it('unknown and unused OIDC parameters are ignored; login_hint fills the username', async () => {
    const s = await setup();
    const page = await s.get(
      authUrl({
        display: 'popup',
        ui_locales: 'fr',
        acr_values: 'x',
        max_age: '0',
        prompt: 'login select_account',
        login_hint: 'alice',
        frobnicate: '1',
      }),
    );
    expect(page.statusCode).toBe(200);
    expect(page.body).toMatch(/id="username"[^>]*value="alice"/);
  });

  it('prompt=consent shows the consent page again although consent is stored', async () => {
    const s = await setup();
    const signIn = async (extra: Record<string, string>) => {
      const page = await s.get(authUrl(extra));
      return s.post('/auth/sign-in', {
        interaction: field(page.body, 'interaction'),
        csrf: field(page.body, 'csrf'),
        username: 'alice',
        password: 'wonderland',
      });
    };
    const first = await signIn({});
    expect(String(first.headers['location'])).toMatch(/^\/auth\/consent/);
    const consentPage = await s.get(String(first.headers['location']));
    const allowed = await s.post('/auth/consent', {
      interaction: field(consentPage.body, 'interaction'),
      csrf: field(consentPage.body, 'csrf'),
      decision: 'allow',
    });
    expect(new URL(String(allowed.headers['location'])).searchParams.get('code')).toBeTruthy();

    const again = await signIn({});
    expect(new URL(String(again.headers['location'])).searchParams.get('code')).toBeTruthy();
    const forced = await signIn({ prompt: 'consent' });
    expect(String(forced.headers['location'])).toMatch(/^\/auth\/consent/);
  });
});

describe('first-party clients (skip_consent)', () => {
  it('sign-in goes straight back with a code, no consent page; prompt=consent still shows it', async () => {
    const s = await setup({ ...app, skip_consent: true });
    const signIn = async (extra: Record<string, string>) => {
      const page = await s.get(authUrl(extra));
      return s.post('/auth/sign-in', {
        interaction: field(page.body, 'interaction'),
        csrf: field(page.body, 'csrf'),
        username: 'alice',
        password: 'wonderland',
      });
    };
    const first = await signIn({});
    expect(new URL(String(first.headers['location'])).searchParams.get('code')).toBeTruthy();
    const forced = await signIn({ prompt: 'consent' });
    expect(String(forced.headers['location'])).toMatch(/^\/auth\/consent/);
  });
});

describe('sign-in sessions (in process)', () => {
  const signIn = async (s: Awaited<ReturnType<typeof setup>>) => {
    const page = await s.get(authUrl({}));
    return s.post('/auth/sign-in', {
      interaction: field(page.body, 'interaction'),
      csrf: field(page.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
  };

  it('the session cookie is __Host-, Secure and HttpOnly over https; revoking a consent ends the session', async () => {
    const s = await setup({ ...app, skip_consent: true }, true);
    const signedIn = await signIn(s);
    expect(String(signedIn.headers['set-cookie'])).toMatch(
      /__Host-portcullis_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure/,
    );
    expect((await s.get(authUrl({}))).statusCode).toBe(303);

    const account = await s.get('/consents');
    await s.post('/consents/sign-in', {
      csrf: field(account.body, 'csrf'),
      username: 'alice',
      password: 'wonderland',
    });
    const list = await s.get('/consents');
    await s.post('/consents/revoke', { csrf: field(list.body, 'csrf'), client_id: 'app' });
    const after = await s.get(authUrl({}));
    expect(after.statusCode).toBe(200);
    expect(after.body).toContain('id="sign-in-title"');
  });

  it('a user removed from the users file loses the session', async () => {
    const s = await setup({ ...app, skip_consent: true }, true);
    await signIn(s);
    expect((await s.get(authUrl({}))).statusCode).toBe(303);
    gone.add('alice');
    try {
      expect(redirectError(await s.get(authUrl({ prompt: 'none' })))).toBe('login_required');
    } finally {
      gone.delete('alice');
    }
  });
});

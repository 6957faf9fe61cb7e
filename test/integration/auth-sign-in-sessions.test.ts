// Sign-in sessions across the clients of one auth server (AUTH_SIGN_IN_SESSIONS), on both stores,
// with openid-client as the relying party: signed in for one client, the next one gets a code
// without a password (consent still asked once); prompt=none, prompt=login and max_age; RP-initiated
// logout with id_token_hint and a registered post_logout_redirect_uri ends the session. With
// sessions off (the default) every authorization shows the sign-in page.
import * as client from 'openid-client';
import { describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { stackOn } from '../harness/fixtures.ts';
import { browser, hidden, walk, type Browserish } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const SECOND_SECRET = 'second-oidc-secret-0123456789abcdef0123456789';
const SIGNED_OUT = 'http://127.0.0.1:1/signed-out';

describe.each(['memory', 'redis'] as const)('sign-in sessions (%s store)', (store) => {
  const on = stackOn(store, {
    authEnv: { AUTH_SIGN_IN_SESSIONS: 'true' },
    extraClients: [
      {
        client_id: 'second-client',
        client_secret_hash: hashClientSecret(SECOND_SECRET),
        display_name: 'Second',
        redirect_uris: ['http://127.0.0.1:1/callback'],
        post_logout_redirect_uris: [SIGNED_OUT],
        scopes: ['openid', 'profile'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
  });

  const rp = (id: string, secret: string) =>
    client.discovery(new URL(on.stack().issuer), id, undefined, client.ClientSecretBasic(secret), {
      execute: [client.allowInsecureRequests],
    });

  function authUrl(config: client.Configuration, extra: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    return client.calculatePKCECodeChallenge(verifier).then((challenge) => ({
      url: client.buildAuthorizationUrl(config, {
        redirect_uri: on.stack().redirectUri,
        scope: 'openid profile',
        nonce,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        ...extra,
      }),
      verifier,
      nonce,
    }));
  }

  /** GET /auth in browser b: the status and where it leads. */
  async function visit(b: Browserish, url: URL) {
    const res = await b.get(url.toString());
    return {
      status: res.status,
      location: res.headers.get('location') ?? '',
      body: await res.text(),
    };
  }

  /** The code redirect for url in b (signed in by its session), allowing consent when asked. */
  async function codeRedirect(b: Browserish, url: URL): Promise<URL> {
    const step = await visit(b, url);
    if (!step.location.startsWith('/auth/consent')) return new URL(step.location);
    const page = await (await b.get(new URL(step.location, on.stack().issuer).toString())).text();
    const allowed = await b.post(`${on.stack().issuer}/auth/consent`, {
      interaction: hidden(page, 'interaction') ?? '',
      csrf: hidden(page, 'csrf') ?? '',
      decision: 'allow',
    });
    return new URL(allowed.headers.get('location') ?? '');
  }

  async function signedInBrowser() {
    const b = browser();
    const first = await rp('oidc-client', SECRETS.oidc);
    const a = await authUrl(first);
    const { location } = await walk(a.url.toString(), { b });
    const tokens = await client.authorizationCodeGrant(first, location, {
      pkceCodeVerifier: a.verifier,
      expectedNonce: a.nonce,
      idTokenExpected: true,
    });
    return { b, first, tokens };
  }

  it('signed in for one client, the next gets a code without a password; consent is still asked once', async () => {
    const { b, tokens } = await signedInBrowser();
    const second = await rp('second-client', SECOND_SECRET);
    const s = await authUrl(second);
    const step = await visit(b, s.url);
    expect(step.status).toBe(303);
    expect(step.location).toMatch(/^\/auth\/consent\?/);
    const consentPage = await (
      await b.get(new URL(step.location, on.stack().issuer).toString())
    ).text();
    const allowed = await b.post(`${on.stack().issuer}/auth/consent`, {
      interaction: hidden(consentPage, 'interaction') ?? '',
      csrf: hidden(consentPage, 'csrf') ?? '',
      decision: 'allow',
    });
    const got = await client.authorizationCodeGrant(
      second,
      new URL(allowed.headers.get('location') ?? ''),
      { pkceCodeVerifier: s.verifier, expectedNonce: s.nonce, idTokenExpected: true },
    );
    // Same sign-in: same user and auth_time.
    expect(got.claims()).toMatchObject({
      sub: 'alice',
      aud: 'second-client',
      auth_time: tokens.claims()?.['auth_time'],
    });

    // Consent stored now: prompt=none answers with a code at once.
    const again = await authUrl(second, { prompt: 'none' });
    const silent = await visit(b, again.url);
    expect(new URL(silent.location).searchParams.get('code')).toBeTruthy();
  });

  it('prompt=login and a max_age shorter than the sign-in show the sign-in page; prompt=none without consent is consent_required', async () => {
    const { b, first } = await signedInBrowser();
    expect((await visit(b, (await authUrl(first, { prompt: 'login' })).url)).body).toContain(
      'id="sign-in-title"',
    );
    await new Promise((r) => setTimeout(r, 1100));
    expect((await visit(b, (await authUrl(first, { max_age: '0' })).url)).body).toContain(
      'id="sign-in-title"',
    );
    // other-client: alice never allowed it anything.
    const q = new URLSearchParams({
      client_id: 'other-client',
      redirect_uri: on.stack().redirectUri,
      response_type: 'code',
      scope: 'profile',
      prompt: 'none',
      state: 'st',
    });
    const none = await visit(b, new URL(`${on.stack().issuer}/auth?${q}`));
    expect(new URL(none.location).searchParams.get('error')).toBe('consent_required');
  });

  it('RP-initiated logout with id_token_hint ends the session and returns to the registered URI with state', async () => {
    const { b, tokens } = await signedInBrowser();
    const second = await rp('second-client', SECOND_SECRET);
    // A post_logout_redirect_uri another client registered is refused with a page, never followed.
    const foreign = await b.get(
      client
        .buildEndSessionUrl(await rp('oidc-client', SECRETS.oidc), {
          id_token_hint: tokens.id_token ?? '',
          post_logout_redirect_uri: SIGNED_OUT,
        })
        .toString(),
    );
    expect(foreign.status).toBe(400);
    expect(foreign.headers.get('location')).toBeNull();

    const { b: b2 } = await signedInBrowser();
    const s2 = await authUrl(second);
    const t2 = await client.authorizationCodeGrant(second, await codeRedirect(b2, s2.url), {
      pkceCodeVerifier: s2.verifier,
      expectedNonce: s2.nonce,
    });
    const out = await b2.get(
      client
        .buildEndSessionUrl(second, {
          id_token_hint: t2.id_token ?? '',
          post_logout_redirect_uri: SIGNED_OUT,
          state: 'bye',
        })
        .toString(),
    );
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe(`${SIGNED_OUT}?state=bye`);
    const none = await visit(b2, (await authUrl(second, { prompt: 'none' })).url);
    expect(new URL(none.location).searchParams.get('error')).toBe('login_required');
    // The first browser's session is its own and still lives.
    const still = await visit(
      b,
      (await authUrl(await rp('oidc-client', SECRETS.oidc), { prompt: 'none' })).url,
    );
    expect(new URL(still.location).searchParams.get('code')).toBeTruthy();
  });

  it("an id_token_hint of another user does not end the session without the user's confirmation", async () => {
    const { b } = await signedInBrowser();
    // Bob's own id_token, sent to alice's browser as a link.
    const first = await rp('oidc-client', SECRETS.oidc);
    const a = await authUrl(first);
    const { location } = await walk(a.url.toString(), { username: 'bob', password: 'builder' });
    const bobs = await client.authorizationCodeGrant(first, location, {
      pkceCodeVerifier: a.verifier,
      expectedNonce: a.nonce,
      idTokenExpected: true,
    });
    const page = await b.get(
      client.buildEndSessionUrl(first, { id_token_hint: bobs.id_token ?? '' }).toString(),
    );
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('id="sign-out"');
    // Alice is still signed in.
    const still = await visit(b, (await authUrl(first, { prompt: 'none' })).url);
    expect(new URL(still.location).searchParams.get('code')).toBeTruthy();
  });

  it('without id_token_hint the user confirms; the session cookie is __Host- only over https (here plain, HttpOnly)', async () => {
    const { b } = await signedInBrowser();
    const page = await b.get(`${on.stack().issuer}/end-session`);
    expect(await page.text()).toContain('id="sign-out"');
    const done = await b.post(`${on.stack().issuer}/end-session`, { confirm: 'yes' });
    expect(done.status).toBe(200);
    expect(done.headers.getSetCookie().join(';')).toMatch(/portcullis_session=; .*Max-Age=0/);
  });
});

describe('sign-in sessions off (the default)', () => {
  const on = stackOn('memory');
  it('every authorization shows the sign-in page, and prompt=none is login_required', async () => {
    const b = browser();
    const config = await client.discovery(
      new URL(on.stack().issuer),
      'oidc-client',
      undefined,
      client.ClientSecretBasic(SECRETS.oidc),
      { execute: [client.allowInsecureRequests] },
    );
    const url = () =>
      client.buildAuthorizationUrl(config, {
        redirect_uri: on.stack().redirectUri,
        scope: 'openid',
        nonce: client.randomNonce(),
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
    await walk(url().toString(), { b });
    const again = await b.get(url().toString());
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('id="sign-in-title"');
    const none = await b.get(`${url().toString()}&prompt=none`);
    expect(new URL(none.headers.get('location') ?? '').searchParams.get('error')).toBe(
      'login_required',
    );
  });
});

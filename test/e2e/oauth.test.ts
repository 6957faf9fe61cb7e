// OAuth 2.0 sign-in on the real cluster: an OAuthClient gets its Secret and an auth server in its
// namespace; the code flow runs through a port-forward to that auth server's Service (the issuer
// the chart was installed with), driven by openid-client and by Chromium; the issued access token
// is accepted at /me by the user service behind the gateway. A second route keys its buckets on
// the verified subject of those tokens (jwt key, a rule for /me), fetching the auth server's JWKS
// inside the cluster.
import { createServer, type Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { walk } from '../harness/auth-flow.ts';
import { eventually, Kube, type PortForward } from '../harness/kind/kube.ts';
import { freePort } from '../harness/ports.ts';
import { deploy, namespaceFor, oauthClient, route, usersSecret } from './support/workloads.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('oauth');
const issuer = `http://127.0.0.1:${ctx.issuerPort}`;
const users = [
  { username: 'alice', password: 'alice-e2e-password', name: 'Alice Liddell' },
  { username: 'bob', password: 'bob-e2e-password', name: 'Bob Builder' },
];

let callbackPort: number;
let redirectUri: string;
let gateway: PortForward;
let jwtGateway: PortForward;
/** alice's access token from the first test. */
let aliceToken: string | undefined;
let config: oidc.Configuration;
let browser: Browser | undefined;
let callbacks: Server | undefined;
const received: URL[] = [];

beforeAll(async () => {
  callbackPort = await freePort();
  redirectUri = `http://127.0.0.1:${callbackPort}/callback`;
  await deploy(kube, ctx, ns, [
    await usersSecret(users),
    oauthClient('demo-app', [redirectUri], {
      displayName: 'Demo App',
      tokenEndpointAuthMethod: 'client_secret_basic',
    }),
    route(ctx, 'api', {
      limits: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
      env: [
        { name: 'AUTH_ISSUER', value: issuer },
        {
          name: 'AUTH_JWKS_URL',
          value: `http://portcullis-auth-server.${ns}.svc.cluster.local/jwks.json`,
        },
      ],
    }),
    route(ctx, 'api-jwt', {
      limits: {
        // No issuer named: the namespace's auth server, its keys fetched from its Service in the cluster.
        key: { source: 'jwt' },
        rules: [
          {
            name: 'me',
            path: '/me',
            methods: ['GET'],
            limits: [{ replenishRate: 1, burstCapacity: 3 }],
          },
        ],
      },
      env: [
        { name: 'AUTH_ISSUER', value: issuer },
        {
          name: 'AUTH_JWKS_URL',
          value: `http://portcullis-auth-server.${ns}.svc.cluster.local/jwks.json`,
        },
      ],
    }),
  ]);
  await kube.wait(ns, ['oauthclient/demo-app'], 'condition=Ready', 300);
  await kube.rolloutStatus(ns, 'portcullis-auth-server');
  // The issuer the chart was installed with is this forward's address.
  await kube.portForward(ns, 'service/portcullis-auth-server', 80, ctx.issuerPort);
  gateway = await kube.portForward(ns, 'service/api', 80);
  jwtGateway = await kube.portForward(ns, 'service/api-jwt', 80);
  // The Redirect URI's server: the browser lands here with the code.
  callbacks = createServer((req, res) => {
    // Only the redirect itself: the browser also asks this origin for /favicon.ico.
    const url = new URL(req.url ?? '/', redirectUri);
    if (url.pathname === '/callback') received.push(url);
    res
      .writeHead(url.pathname === '/callback' ? 200 : 404, { 'content-type': 'text/plain' })
      .end('signed in');
  });
  await new Promise<void>((resolve) => callbacks!.listen(callbackPort, '127.0.0.1', resolve));
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (callbacks ? callbacks.close(() => resolve()) : resolve()));
  await kube.close();
  await kube.deleteNamespace(ns);
});

async function clientCredentials(): Promise<{ clientId: string; clientSecret: string }> {
  const secret = await kube.json<{ data: Record<string, string> }>([
    '-n',
    ns,
    'get',
    'secret',
    'demo-app-oauth-client',
  ]);
  const decode = (k: string) => Buffer.from(secret.data[k] ?? '', 'base64').toString('utf8');
  return { clientId: decode('client_id'), clientSecret: decode('client_secret') };
}

async function me(accessToken: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${gateway.url}/me`, {
    headers: { authorization: `Bearer ${accessToken}`, 'USER-ID': 'oauth-e2e' },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('OAuthClient and the code flow on a real cluster', () => {
  it('the OAuthClient has a Secret with its generated id and secret, named in its status', async () => {
    const { clientId, clientSecret } = await clientCredentials();
    expect(clientId).toMatch(/^[A-Za-z0-9._~-]{8,128}$/);
    expect(clientSecret.length).toBeGreaterThanOrEqual(32);
    const status = await kube.json<{ status: { clientId: string; secretName: string } }>([
      '-n',
      ns,
      'get',
      'oauthclient',
      'demo-app',
    ]);
    expect(status.status).toMatchObject({ clientId, secretName: 'demo-app-oauth-client' });
    const dep = await kube.json<{ status: { readyReplicas?: number } }>([
      '-n',
      ns,
      'get',
      'deployment',
      'portcullis-auth-server',
    ]);
    expect(dep.status.readyReplicas).toBeGreaterThanOrEqual(1);
  });

  it('openid-client: discovery, PKCE, sign-in and consent, code exchange; /me through the gateway accepts the token', async () => {
    const { clientId, clientSecret } = await clientCredentials();
    config = await oidc.discovery(
      new URL(issuer),
      clientId,
      undefined,
      oidc.ClientSecretBasic(clientSecret),
      { algorithm: 'oauth2', execute: [oidc.allowInsecureRequests] },
    );
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'profile',
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const { location, consentShown } = await walk(url.href, {
      username: 'alice',
      password: 'alice-e2e-password',
    });
    expect(consentShown).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, location, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    expect(tokens.token_type.toLowerCase()).toBe('bearer');
    expect(tokens.scope).toBe('profile');

    const res = await me(tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sub: 'alice', name: 'Alice Liddell' });
    aliceToken = tokens.access_token;
    // And a token the auth server did not sign is refused at the same place.
    expect((await me(`${tokens.access_token.slice(0, -4)}AAAA`)).status).toBe(401);
  });

  it("a route keyed on the verified subject: a USER-ID of the client's choosing stays in alice's bucket; no token is a 401", async () => {
    expect(aliceToken).toBeDefined();
    const statuses: number[] = [];
    let policy: string | null = null;
    const started = performance.now();
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${jwtGateway.url}/me`, {
        headers: { authorization: `Bearer ${aliceToken as string}`, 'USER-ID': `someone-${i}` },
      });
      statuses.push(res.status);
      if (res.status === 200) {
        expect(await res.json()).toMatchObject({ sub: 'alice' });
        policy = res.headers.get('ratelimit-policy');
      } else await res.body?.cancel();
    }
    const elapsedS = (performance.now() - started) / 1000;
    // Burst 3, one token a second: three pass, then one more per second gone by; the rest are 429.
    expect(statuses.slice(0, 3)).toEqual([200, 200, 200]);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(3 + Math.ceil(elapsedS));
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    expect(statuses).toContain(429);
    expect(policy).toBe('"rule1";q=3;w=3');
    const anonymous = await fetch(`${jwtGateway.url}/me`, { headers: { 'USER-ID': 'alice' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
    expect(anonymous.headers.get('content-type')).toBe('application/problem+json');
  });

  it('Chromium: sign-in page, consent once, redirect with the code; the second sign-in asks no consent', async () => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const signIn = async (): Promise<{
      consent: boolean;
      callback: URL;
      state: string;
      verifier: string;
    }> => {
      const page = await (await browser!.newContext()).newPage();
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'profile',
        state,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      });
      const before = received.length;
      await page.goto(url.href);
      await page.waitForSelector('#sign-in-title');
      await page.fill('input[name=username]', 'bob');
      await page.fill('input[name=password]', 'bob-e2e-password');
      await page.click('button#sign-in');
      const landed = page
        .waitForURL((u) => u.href.startsWith(redirectUri), { timeout: 30_000 })
        .then(() => false);
      const consent = await Promise.race([
        landed,
        page.waitForSelector('#consent-title', { timeout: 30_000 }).then(
          () => true,
          () => false,
        ),
      ]);
      if (consent) await page.click('#allow');
      await landed;
      await page.context().close();
      const callback = await eventually('the callback', async () => received[before], 10_000, 100);
      return { consent, callback, state, verifier };
    };

    const first = await signIn();
    expect(first.consent).toBe(true);
    expect(first.callback.searchParams.get('code')).toMatch(/./);
    // authorizationCodeGrant checks state and iss (RFC 9207) on the redirect the browser made.
    const tokens = await oidc.authorizationCodeGrant(config, first.callback, {
      pkceCodeVerifier: first.verifier,
      expectedState: first.state,
    });
    const res = await me(tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ sub: 'bob', name: 'Bob Builder' });

    const second = await signIn();
    expect(second.consent).toBe(false);
    const again = await oidc.authorizationCodeGrant(config, second.callback, {
      pkceCodeVerifier: second.verifier,
      expectedState: second.state,
    });
    expect((await me(again.access_token)).body).toMatchObject({ sub: 'bob' });
  });
});

// oauth2-proxy (built from its Go module, support/oauth2-proxy.ts) in the cluster in front of a
// RateLimitRoute keyed on the verified subject of the access token (jwt key). A user signs in
// through oauth2-proxy at the namespace's auth server, over plain HTTP as a browser would
// (redirects followed, the sign-in and consent forms posted); oauth2-proxy discovers the issuer,
// redeems the code, checks the id_token and sends the access token upstream as
// `Authorization: Bearer`; the route's sidecar verifies it and charges the user's own bucket.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { browser, walk, type Browserish } from '../harness/auth-flow.ts';
import { Kube, type PortForward } from '../harness/kind/kube.ts';
import { freePort } from '../harness/ports.ts';
import { OAUTH2_PROXY, OAUTH2_PROXY_PORT, oauth2ProxyObjects } from './support/oauth2-proxy.ts';
import { deploy, namespaceFor, oauthClient, route, usersSecret } from './support/workloads.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('oauth2-proxy');
const issuer = `http://127.0.0.1:${ctx.issuerPort}`;
const authServerHost = `portcullis-auth-server.${ns}.svc.cluster.local`;
const users = {
  alice: { username: 'alice', password: 'alice-proxy-password', email: 'alice@example.com' },
  bob: { username: 'bob', password: 'bob-proxy-password', email: 'bob@example.com' },
};
// Each request costs a third of the bucket, and the third refills in 100 s: three requests are
// admitted, then every one is refused for far longer than the test takes.
const LIMIT = { replenishRate: 1, burstCapacity: 300, requestedTokens: 100 };
const ADMITTED = LIMIT.burstCapacity / LIMIT.requestedTokens;
const REFILL_S = LIMIT.requestedTokens / LIMIT.replenishRate;
const REQUESTS = 8;

let proxy: PortForward;
/** When alice's first request through the proxy was sent (ms, performance.now()). */
let aliceStarted = 0;
let alice: Browserish | undefined;

beforeAll(async () => {
  const proxyPort = await freePort();
  const publicUrl = `http://127.0.0.1:${proxyPort}`;
  await deploy(kube, ctx, ns, [
    await usersSecret(Object.values(users)),
    oauthClient('wiki', [`${publicUrl}/oauth2/callback`], {
      displayName: 'Wonderland wiki',
      scopes: ['openid', 'profile', 'email'],
    }),
    route(ctx, 'api', {
      limits: { ...LIMIT, key: { source: 'jwt' } },
      // The user service's /me checks the same token again (AUTH_JWKS_URL: inside the cluster).
      env: [
        { name: 'AUTH_ISSUER', value: issuer },
        { name: 'AUTH_JWKS_URL', value: `http://${authServerHost}/jwks.json` },
      ],
    }),
  ]);
  await kube.wait(ns, ['oauthclient/wiki'], 'condition=Ready', 300);
  await kube.rolloutStatus(ns, 'portcullis-auth-server');
  // The issuer the chart was installed with is this forward's address.
  await kube.portForward(ns, 'service/portcullis-auth-server', 80, ctx.issuerPort);
  await kube.apply(
    oauth2ProxyObjects(ctx, {
      oauthClient: 'wiki',
      issuer,
      authServerHost,
      upstream: `http://api.${ns}.svc.cluster.local/`,
      publicUrl,
      cookieSecret: randomBytes(16).toString('hex'),
    }),
    ns,
  );
  await kube.rolloutStatus(ns, OAUTH2_PROXY, 180);
  proxy = await kube.portForward(ns, `service/${OAUTH2_PROXY}`, OAUTH2_PROXY_PORT, proxyPort);
});

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

/**
 * Opens the app as a browser with no session: oauth2-proxy sends it to the auth server, where it
 * signs in and consents; the callback leaves oauth2-proxy's session cookie in the browser.
 */
async function signInThroughProxy(user: {
  username: string;
  password: string;
}): Promise<{ b: Browserish; consentShown: boolean }> {
  const b = browser();
  let url = `${proxy.url}/me`;
  for (let hop = 0; new URL(url).origin !== issuer; hop++) {
    if (hop === 5)
      throw new Error(`oauth2-proxy did not send the browser to the issuer (last ${url})`);
    const res = await b.get(url);
    await res.body?.cancel();
    expect([302, 303, 307]).toContain(res.status);
    url = new URL(res.headers.get('location') ?? '', url).href;
  }
  const authorize = new URL(url);
  expect(authorize.pathname).toBe('/auth');
  expect(authorize.searchParams.get('scope')).toBe('openid profile email');
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('nonce')).toMatch(/./);
  const { location, consentShown } = await walk(url, {
    b,
    username: user.username,
    password: user.password,
  });
  expect(`${location.origin}${location.pathname}`).toBe(`${proxy.url}/oauth2/callback`);
  // oauth2-proxy redeems the code, verifies the id_token and sends the browser back where it started.
  const callback = await b.get(location.href);
  const body = await callback.text();
  expect(callback.status, body.slice(0, 300)).toBe(302);
  expect(new URL(callback.headers.get('location') ?? '', proxy.url).pathname).toBe('/me');
  return { b, consentShown };
}

interface Answer {
  readonly status: number;
  readonly sub?: unknown;
  readonly retryAfter: string | null;
  readonly contentType: string | null;
}

/** REQUESTS signed-in GETs of /me through oauth2-proxy, each with a USER-ID header of the client's choosing. */
async function burst(b: Browserish, label: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    const res = await fetch(`${proxy.url}/me`, {
      redirect: 'manual',
      headers: { cookie: b.jar.header(), 'USER-ID': `${label}-${i}` },
    });
    const contentType = res.headers.get('content-type');
    const json =
      contentType?.includes('json') === true
        ? ((await res.json()) as Record<string, unknown>)
        : (await res.body?.cancel(), {});
    answers.push({
      status: res.status,
      sub: json['sub'],
      retryAfter: res.headers.get('retry-after'),
      contentType,
    });
  }
  return answers;
}

function expectLimited(answers: readonly Answer[], username: string, startedMs: number): void {
  const elapsedS = (performance.now() - startedMs) / 1000;
  const admitted = answers.filter((a) => a.status === 200);
  const limited = answers.filter((a) => a.status === 429);
  process.stderr.write(
    `e2e oauth2-proxy: ${username}: ${admitted.length} admitted, ${limited.length} limited in ${elapsedS.toFixed(1)} s\n`,
  );
  expect(answers.map((a) => a.status)).toEqual([
    ...Array<number>(ADMITTED).fill(200),
    ...Array<number>(REQUESTS - ADMITTED).fill(429),
  ]);
  expect(elapsedS).toBeLessThan(REFILL_S);
  for (const a of admitted) expect(a.sub).toBe(username);
  for (const a of limited) {
    expect(a.contentType).toBe('application/problem+json');
    expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(a.retryAfter)).toBeLessThanOrEqual(REFILL_S);
  }
}

describe('oauth2-proxy in the cluster in front of a route keyed on the verified subject', () => {
  it('oauth2-proxy found the auth server by OIDC discovery at the issuer', async () => {
    expect(await kube.logs(ns, `deployment/${OAUTH2_PROXY}`, OAUTH2_PROXY)).toContain(
      'Performing OIDC Discovery',
    );
    const unauthenticated = await fetch(`${proxy.url}/me`, { redirect: 'manual' });
    await unauthenticated.body?.cancel();
    expect(unauthenticated.status).toBe(302);
  });

  it(`alice signs in through oauth2-proxy (sign-in and consent forms); her access token reaches the app; ${ADMITTED} admitted, then 429 with Retry-After`, async () => {
    const session = await signInThroughProxy(users.alice);
    expect(session.consentShown).toBe(true);
    alice = session.b;
    aliceStarted = performance.now();
    expectLimited(await burst(alice, 'alice-picks'), 'alice', aliceStarted);
  });

  it(`bob has a bucket of his own: ${ADMITTED} admitted while alice's is empty, and alice stays limited`, async () => {
    expect(alice).toBeDefined();
    const started = performance.now();
    const session = await signInThroughProxy(users.bob);
    expect(session.consentShown).toBe(true);
    expectLimited(await burst(session.b, 'bob-picks'), 'bob', started);
    const again = await burst(alice as Browserish, 'alice-again');
    expect(again.map((a) => a.status)).toEqual(Array<number>(REQUESTS).fill(429));
    expect((performance.now() - aliceStarted) / 1000).toBeLessThan(REFILL_S);
  });
});

// oauth2-proxy (the OIDC reverse proxy most Kubernetes clusters run, built from its Go module) in
// front of an app, with the auth server as its OpenID Connect provider: Debian's Chromium opens the
// app, signs in on Portcullis's page and lands on the upstream with the identity headers; an
// --allowed-group the user is not in is refused; an expired session refreshes without a sign-in;
// sign-out through the auth server's end-session endpoint ends it. On the memory store and Redis.
// The flags are docs/concepts/auth-server.md's ("Behind oauth2-proxy"), from test/harness/peers/oauth2-proxy.ts.
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import { perDescribe } from '../harness/fixtures.ts';
import {
  startOAuth2Proxy,
  echoIdentity,
  type EchoedIdentity,
} from '../harness/peers/oauth2-proxy.ts';
import { freePort } from '../harness/ports.ts';
import { chartRedisArgs } from '../harness/redis.ts';

const CLIENT_ID = 'oauth2-proxy';
const CLIENT_SECRET = 'oauth2-proxy-client-secret-0123456789abcdef012';
// offline_access: with openid granted, a refresh token comes only with it (Core 11); without one
// oauth2-proxy cannot refresh and the session ends when the access token does.
const SCOPE = 'openid profile email groups offline_access';
// Short lived on purpose (the minimum): the refresh test waits for the access token to expire.
const ACCESS_TOKEN_TTL_SECONDS = 10;

/** The value of one series in a Prometheus exposition (0 when absent). */
async function counter(metricsUrl: string, series: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
const REFRESH_GRANTS = 'portcullis_auth_access_tokens_issued_total{grant_type="refresh_token"}';

describe.each(['memory', 'redis'] as const)(
  'oauth2-proxy in front of an app, signing in at the auth server (%s store)',
  (store) => {
    const env = perDescribe(async (start) => {
      const ports = { app: await freePort(), guarded: await freePort() };
      const appUrl = `http://127.0.0.1:${ports.app}`;
      const password = 'auth-stack-redis-password';
      const redis =
        store === 'redis'
          ? await start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), {
              password,
            })
          : undefined;
      const stack = await start.authStack({
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
        // With sign-in sessions, leaving oauth2-proxy alone does not sign out: end-session must run too.
        authEnv: {
          AUTH_SIGN_IN_SESSIONS: 'true',
          AUTH_ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TOKEN_TTL_SECONDS),
        },
        extraClients: [
          {
            client_id: CLIENT_ID,
            client_secret_hash: hashClientSecret(CLIENT_SECRET),
            display_name: 'Wonderland wiki',
            redirect_uris: [
              `${appUrl}/oauth2/callback`,
              `http://127.0.0.1:${ports.guarded}/oauth2/callback`,
            ],
            post_logout_redirect_uris: [`${appUrl}/`],
            scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
            grant_types: ['authorization_code', 'refresh_token'],
            token_endpoint_auth_method: 'client_secret_basic',
            skip_consent: true,
          },
        ],
      });
      const upstream = await start.upstream(echoIdentity);
      const common = {
        issuer: stack.issuer,
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        upstream: upstream.url,
        scope: SCOPE,
      };
      // alice is in `readers` and `wonderland-admins`, not in `wonderland-guards`.
      const app = await startOAuth2Proxy({
        ...common,
        port: ports.app,
        cookieName: '_wiki',
        cookieSecret: 'app-cookie-secret-0123456789abcd',
        extraArgs: ['--allowed-group=readers', '--cookie-refresh=3s'],
      });
      start.defer(() => app.program.stop());
      const guarded = await startOAuth2Proxy(
        {
          ...common,
          port: ports.guarded,
          cookieName: '_guarded',
          cookieSecret: 'guarded-cookie-secret-0123456789',
          extraArgs: ['--allowed-group=wonderland-guards'],
        },
        'oauth2-proxy-guarded',
      );
      start.defer(() => guarded.program.stop());
      const browser = await chromium.launch({
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
      start.defer(() => browser.close());
      return { stack, app, guarded, browser };
    });

    /**
     * A fresh browser profile that records every page it shows (`visited`) and every address its
     * navigations requested (`requested`: redirects included, which show no page).
     */
    async function freshPage(): Promise<{
      context: BrowserContext;
      page: Page;
      visited: URL[];
      requested: URL[];
    }> {
      const context = await env.browser.newContext();
      const page = await context.newPage();
      const visited: URL[] = [];
      const requested: URL[] = [];
      page.on('framenavigated', (frame) => {
        if (frame === page.mainFrame()) visited.push(new URL(frame.url()));
      });
      page.on('request', (request) => {
        if (request.isNavigationRequest() && request.frame() === page.mainFrame())
          requested.push(new URL(request.url()));
      });
      return { context, page, visited, requested };
    }

    /** From the app's URL to Portcullis's sign-in page (oauth2-proxy sends the browser there), signed in as alice. */
    async function signInThrough(page: Page, url: string): Promise<void> {
      await page.goto(url);
      await page.waitForSelector('#sign-in-title');
      expect(new URL(page.url()).origin).toBe(env.stack.issuer);
      expect(await page.textContent('.lead')).toContain('Wonderland wiki');
      await page.fill('input[name=username]', 'alice');
      await page.fill('input[name=password]', 'wonderland');
      await page.click('button#sign-in');
    }

    const echoed = async (page: Page): Promise<EchoedIdentity> => {
      await page.waitForSelector('#echo');
      return JSON.parse((await page.textContent('#echo')) ?? '{}') as EchoedIdentity;
    };

    it('signs in on the Portcullis page and lands on the upstream with X-Forwarded-Email, -User and -Groups', async () => {
      const { context, page } = await freshPage();
      await signInThrough(page, `${env.app.url}/wiki/Caterpillar?tab=talk`);
      const identity = await echoed(page);
      expect(new URL(page.url()).origin).toBe(env.app.url);
      expect(identity).toMatchObject({
        path: '/wiki/Caterpillar?tab=talk',
        email: 'alice@example.com',
        user: 'alice',
        preferredUsername: 'alice',
      });
      expect(identity.groups?.split(',').sort()).toEqual(['readers', 'wonderland-admins']);
      await context.close();
    });

    it('--allowed-group refuses a user outside the group with 403, and the upstream never sees the request', async () => {
      const { context, page, visited } = await freshPage();
      const callback = page.waitForResponse(
        (r) => new URL(r.url()).pathname === '/oauth2/callback',
      );
      await signInThrough(page, `${env.guarded.url}/vault`);
      expect((await callback).status()).toBe(403);
      expect(await page.$('#echo')).toBeNull();
      expect(
        visited.some(
          (u) => u.origin === env.guarded.url && u.pathname === '/vault' && u.search === '',
        ),
      ).toBe(false);
      await context.close();
    });

    it('after the access token expired, the next request refreshes the session (a refresh_token grant) without a sign-in page', async () => {
      const { context, page, requested } = await freshPage();
      await signInThrough(page, `${env.app.url}/before`);
      expect((await echoed(page)).email).toBe('alice@example.com');
      const grantsBefore = await counter(env.stack.authMetricsUrls[0] ?? '', REFRESH_GRANTS);

      await page.waitForTimeout((ACCESS_TOKEN_TTL_SECONDS + 1) * 1000);
      const seen = requested.length;
      await page.goto(`${env.app.url}/after`);
      const identity = await echoed(page);
      expect(identity).toMatchObject({ path: '/after', email: 'alice@example.com' });
      expect(identity.groups?.split(',').sort()).toEqual(['readers', 'wonderland-admins']);
      // Not even a silent pass through the auth server (its sign-in session would allow one).
      expect(requested.slice(seen).map((u) => u.origin)).toEqual([env.app.url]);
      expect(await counter(env.stack.authMetricsUrls[0] ?? '', REFRESH_GRANTS)).toBeGreaterThan(
        grantsBefore,
      );
      await env.app.program.waitForLine(/Refreshing session - User: alice/);
      await context.close();
    });

    it('sign-out with rd to end-session ends both sessions: the next request shows the sign-in page again', async () => {
      const { context, page } = await freshPage();
      await signInThrough(page, `${env.app.url}/`);
      await echoed(page);
      const endSession = new URL('/end-session', env.stack.issuer);
      endSession.searchParams.set('client_id', CLIENT_ID);
      endSession.searchParams.set('post_logout_redirect_uri', `${env.app.url}/`);
      await page.goto(
        `${env.app.url}/oauth2/sign_out?rd=${encodeURIComponent(endSession.toString())}`,
      );
      await page.waitForSelector('#sign-out-title');
      expect(await page.textContent('.lead')).toContain('Wonderland wiki');
      expect((await context.cookies(env.app.url)).map((c) => c.name)).not.toContain('_wiki');
      await page.click('#sign-out');
      // Back at the app (post_logout_redirect_uri), which sends the browser to sign in afresh.
      await page.waitForSelector('#sign-in-title');
      expect(new URL(page.url()).origin).toBe(env.stack.issuer);
      await page.goto(`${env.app.url}/again`);
      await page.waitForSelector('#sign-in-title');
      expect(await page.$('#echo')).toBeNull();
      await context.close();
    });

    it('sign-out at oauth2-proxy alone leaves the auth server session, which signs the user straight back in', async () => {
      const { context, page, visited, requested } = await freshPage();
      await signInThrough(page, `${env.app.url}/`);
      await echoed(page);
      const [seenPages, seenRequests] = [visited.length, requested.length];
      // oauth2-proxy clears its cookie and sends the browser to `/`, which goes to sign in again.
      await page.goto(`${env.app.url}/oauth2/sign_out`);
      expect((await echoed(page)).email).toBe('alice@example.com');
      // Through the auth server's /auth, but past no page of it.
      expect(
        requested
          .slice(seenRequests)
          .some((u) => u.origin === env.stack.issuer && u.pathname === '/auth'),
      ).toBe(true);
      expect(visited.slice(seenPages).some((u) => u.origin === env.stack.issuer)).toBe(false);
      await context.close();
    });
  },
);

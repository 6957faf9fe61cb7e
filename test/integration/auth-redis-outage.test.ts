// Redis going away under the auth server: requests that need it fail fast with 503 (an HTML page
// for the browser, RFC 6749 temporarily_unavailable for the token endpoint), the process stays up,
// and sign-in works again once Redis is back. Never a 500, a crash or a hung request. The sign-in
// page itself needs no Redis: nothing is stored before someone signs in.
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, browser, hidden, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

describe('auth server when Redis is down', () => {
  const redis = perDescribe((start) => start.redis());
  const stack = perDescribe((start) => start.authStack({ redisUrl: redis.url }));

  const authUrl = () =>
    `${stack.issuer}/auth?${new URLSearchParams({ client_id: 'demo-client', redirect_uri: stack.redirectUri, response_type: 'code' })}`;

  it('answers 503 quickly while Redis is gone and recovers when it returns', async () => {
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const code = location.searchParams.get('code') ?? '';
    await redis.kill();

    const started = Date.now();
    const b = browser();
    const page = await b.get(authUrl());
    expect(page.status).toBe(200);
    const form = await page.text();
    const signIn = await b.post(`${stack.issuer}/auth/sign-in`, {
      interaction: hidden(form, 'interaction') ?? '',
      csrf: hidden(form, 'csrf') ?? '',
      username: 'alice',
      password: 'wonderland',
    });
    expect(signIn.status).toBe(503);
    expect(signIn.headers.get('location')).toBeNull();
    expect(await signIn.text()).toContain('Try again');
    const token = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(token.status).toBe(503);
    expect(token.json).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'the server could not complete the request; try again',
    });
    // Generous bound for a shared 2-core machine; the commands fail at once or after the 1 s timeout.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(stack.programs[0]?.exited()).toBe(false);
    // Stay down long enough for the client's reconnect attempts (50, 100, 150 ms ...) to fail.
    await new Promise((r) => setTimeout(r, 600));

    await redis.start();
    let again: Awaited<ReturnType<typeof authorize>> | undefined;
    for (let i = 0; i < 100 && again === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
      }).catch(() => undefined);
    }
    if (again === undefined) throw new Error('sign-in did not recover after Redis came back');
    const ok = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: again.location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(ok.status).toBe(200);

    // The outage is in the JSON log as a warning, and nothing escapes to stderr unstructured.
    const lines = stack.programs[0]?.lines ?? [];
    expect(lines.some((l) => l.includes('redis connection error'))).toBe(true);
    expect(lines.filter((l) => l.includes('Unhandled error event'))).toEqual([]);
  });
});

// The auth server's metrics, read from its metrics port while the real process serves a failed
// sign-in, a throttled one, a successful sign-in with a code exchange and a wrong client secret:
// each counter and the store-latency histogram move by exactly what those requests did, on the
// memory store and on Redis. The public port serves no /metrics.
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, tokenRequest, trySignIn } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';
import { chartRedisArgs } from '../harness/redis.ts';

type Samples = Map<string, number>;

/** `name{a="1",b="2"}` with labels sorted, the key of one series. */
function seriesKey(name: string, labels: Record<string, string>): string {
  const inner = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]}"`)
    .join(',');
  return `${name}{${inner}}`;
}

/** The Prometheus text format's samples (label values here never hold `,` or `"`). */
function parseExposition(text: string): Samples {
  const out: Samples = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (m[2] ?? '').split(',').filter((p) => p !== '')) {
      const eq = pair.indexOf('=');
      labels[pair.slice(0, eq)] = pair.slice(eq + 2, -1);
    }
    out.set(seriesKey(m[1] ?? '', labels), Number(m[3]));
  }
  return out;
}

async function scrape(url: string): Promise<Samples> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseExposition(await res.text());
}

describe.each(['memory', 'redis'] as const)('auth-server metrics on the %s store', (store) => {
  const stack = perDescribe(async (start) => {
    const password = 'auth-metrics-redis-password';
    const redis =
      store === 'redis'
        ? await start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), {
            password,
          })
        : undefined;
    return start.authStack({
      ...(redis !== undefined ? { redisUrl: redis.url } : {}),
      // One attempt per username and address: the second from one address is throttled.
      authEnv: {
        AUTH_TRUST_PROXY: 'true',
        AUTH_SIGNIN_USER_ADDRESS_BURST: '1',
        AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1',
      },
    });
  });

  it('counts a failed, a throttled and a good sign-in, the token issued, a wrong client secret, and times each store operation', async () => {
    const metricsUrl = stack.authMetricsUrls[0] ?? '';
    const before = await scrape(metricsUrl);

    const guessing = { 'x-forwarded-for': '198.51.100.7' };
    expect(
      (await trySignIn(stack.issuer, stack.redirectUri, 'bob', 'guess', guessing)).status,
    ).toBe(303); // failed: back to the form
    expect(
      (await trySignIn(stack.issuer, stack.redirectUri, 'bob', 'guess', guessing)).status,
    ).toBe(429); // throttled
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const code = location.searchParams.get('code') ?? '';
    const token = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(token.status).toBe(200);
    const wrong = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code,
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: 'not-the-secret',
    });
    expect(wrong.status).toBe(401);

    const after = await scrape(metricsUrl);
    const delta = (name: string, labels: Record<string, string>) =>
      (after.get(seriesKey(name, labels)) ?? 0) - (before.get(seriesKey(name, labels)) ?? 0);

    expect(delta('portcullis_auth_sign_ins_total', { result: 'failed' })).toBe(1);
    expect(delta('portcullis_auth_sign_ins_total', { result: 'throttled' })).toBe(1);
    expect(delta('portcullis_auth_sign_ins_total', { result: 'ok' })).toBe(1);
    expect(delta('portcullis_auth_sign_ins_total', { result: 'busy' })).toBe(0);
    expect(
      delta('portcullis_auth_access_tokens_issued_total', { grant_type: 'authorization_code' }),
    ).toBe(1);
    expect(
      delta('portcullis_auth_access_tokens_issued_total', { grant_type: 'refresh_token' }),
    ).toBe(0);
    expect(delta('portcullis_auth_client_auth_failures_total', { reason: 'rejected' })).toBe(1);
    expect(delta('portcullis_auth_client_auth_failures_total', { reason: 'throttled' })).toBe(0);

    // Requests by route template and status class: the two sign-ins that were checked answered
    // 303 (the failed one back to the form, the good one on to consent), the throttled one 429.
    const requests = (endpoint: string, method: string, status_class: string) =>
      delta('portcullis_auth_requests_total', { endpoint, method, status_class });
    expect(requests('/auth/sign-in', 'POST', '3xx')).toBe(2);
    expect(requests('/auth/sign-in', 'POST', '4xx')).toBe(1);
    expect(requests('/auth', 'GET', '2xx')).toBe(3);
    expect(requests('/auth/consent', 'POST', '3xx')).toBe(1);
    expect(requests('/token', 'POST', '2xx')).toBe(1);
    expect(requests('/token', 'POST', '4xx')).toBe(1);
    expect(delta('portcullis_auth_request_duration_seconds_count', { endpoint: '/token' })).toBe(2);

    // The throttle takes two buckets per attempt (username+address, address) and the username's
    // bucket only when both allow: 3 (failed) + 2 (throttled) + 3 (good) = 8.
    const storeCount = (operation: string) =>
      delta('portcullis_auth_store_duration_seconds_count', { store, operation });
    expect(storeCount('throttle.take')).toBe(8);
    expect(storeCount('codes.put')).toBe(1);
    expect(storeCount('codes.consume')).toBe(1);
    expect(
      delta('portcullis_auth_store_duration_seconds_bucket', {
        store,
        operation: 'throttle.take',
        le: '+Inf',
      }),
    ).toBe(8);
    expect(
      delta('portcullis_auth_store_duration_seconds_sum', { store, operation: 'throttle.take' }),
    ).toBeGreaterThan(0);
    expect(delta('portcullis_auth_store_errors_total', { store, operation: 'throttle.take' })).toBe(
      0,
    );
    expect(
      [...after.keys()].filter(
        (k) =>
          k.startsWith('portcullis_auth_store_duration_seconds_count{') &&
          !k.includes(`store="${store}"`),
      ),
    ).toEqual([]);
    expect(after.get('portcullis_auth_process_resident_memory_bytes{}')).toBeGreaterThan(0);
  });

  it('serves no /metrics on the public port', async () => {
    const res = await fetch(`${stack.issuer}/metrics`);
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('portcullis_auth_');
  });
});

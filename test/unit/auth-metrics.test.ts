// The auth server's metrics in process: store operations timed on an injected clock (plain store
// objects and class adapters alike), requests counted by route template (never the raw path),
// client-auth failures by reason, the metrics port serving /metrics only, and its setting.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import { buildApp } from '../../services/auth-server/app.ts';
import { createClientAuthThrottle } from '../../services/auth-server/client-auth-throttle.ts';
import { hashClientSecret, loadAuthServerConfig } from '../../lib/config/auth-server.ts';
import type { ClientRegistry } from '../../lib/config/client-registry.ts';
import type { AuthContext } from '../../services/auth-server/context.ts';
import { createKeyRing } from '../../services/auth-server/key-ring.ts';
import { AuthMetrics } from '../../services/auth-server/metrics.ts';
import { buildMetricsServer } from '../../services/auth-server/metrics-server.ts';
import { createPasswordGate } from '../../services/auth-server/password-gate.ts';
import { createDirectory } from '../../services/auth-server/registry.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import { createMemoryStores } from '../../services/auth-server/stores/memory.ts';
import { timeAuthStores, timeBucketStore } from '../../services/auth-server/stores/timed-stores.ts';
import type { AuthStores } from '../../services/auth-server/stores/types.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

/** The value of one series (0 when absent). */
async function value(
  metrics: AuthMetrics,
  name: string,
  labels: Record<string, string>,
): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const hit = values.find(
    (v) =>
      Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l) &&
      Object.keys(v.labels).length >= Object.keys(labels).length,
  );
  return hit?.value ?? 0;
}

describe('store latency', () => {
  it('times each store operation on the injected clock, by store kind and operation, and counts failures', async () => {
    let t = 1_000;
    const metrics = new AuthMetrics({ defaultMetrics: false });
    const raw = createMemoryStores(() => Date.now());
    // Each operation takes 3 ms on the fake clock: the inner put advances it.
    const slow: AuthStores = {
      ...raw,
      interactions: {
        ...raw.interactions,
        put: async (...args) => {
          t += 3;
          return raw.interactions.put(...args);
        },
      },
      consents: {
        ...raw.consents,
        get: async () => {
          t += 7;
          throw new Error('store down');
        },
      },
    };
    const stores = timeAuthStores(
      slow,
      () => t,
      (op, s, ok) => metrics.storeCall('memory', op, s, ok),
    );
    await stores.interactions.put(
      'a',
      { kind: 'account', browserHash: 'h', csrf: 'c', expiresAt: 0 },
      60_000,
    );
    await stores.interactions.put(
      'b',
      { kind: 'account', browserHash: 'h', csrf: 'c', expiresAt: 0 },
      60_000,
    );
    await expect(stores.consents.get('alice', 'app')).rejects.toThrow('store down');
    expect(await stores.interactions.get('a')).toMatchObject({ csrf: 'c' });

    const put = { store: 'memory', operation: 'interactions.put' };
    expect(
      await value(metrics, 'portcullis_auth_store_duration_seconds', { ...put, le: '0.0025' }),
    ).toBe(0);
    expect(
      await value(metrics, 'portcullis_auth_store_duration_seconds', { ...put, le: '0.005' }),
    ).toBe(2);
    const sum = (await metrics.storeDuration.get()).values.find(
      (v) =>
        v.metricName === 'portcullis_auth_store_duration_seconds_sum' &&
        v.labels['operation'] === 'interactions.put',
    );
    expect(sum?.value).toBeCloseTo(0.006, 9);
    expect(
      await value(metrics, 'portcullis_auth_store_duration_seconds', {
        store: 'memory',
        operation: 'interactions.get',
        le: '0.0001',
      }),
    ).toBe(1);
    expect(
      await value(metrics, 'portcullis_auth_store_errors_total', {
        store: 'memory',
        operation: 'consents.get',
      }),
    ).toBe(1);
    expect(
      await value(metrics, 'portcullis_auth_store_errors_total', {
        store: 'memory',
        operation: 'interactions.put',
      }),
    ).toBe(0);
    await stores.close();
  });

  it("times the sign-in throttle's takes on a class adapter (private fields intact), from the call to the sink's answer", async () => {
    // The timing clock moves 2 ms on each read: the take is observed as 0.002 s.
    let ms = 0;
    const seen: string[] = [];
    const buckets = timeBucketStore(
      new MemoryBucketStore({ now: () => 0 }),
      () => (ms += 2),
      (op, s, ok) => seen.push(`${op} ${s} ${ok}`),
    );
    const decision = await takeOne(buckets, 'k', {
      replenishRate: 1,
      burstCapacity: 2,
      requestedTokens: 1,
    });
    expect(decision.allowed).toBe(true);
    expect(buckets.isReady()).toBe(true);
    expect(seen).toEqual(['throttle.take 0.002 true']);
    await buckets.close();
  });
});

describe('the auth server app counts requests by route template', () => {
  let metrics: AuthMetrics;
  let app: Awaited<ReturnType<typeof buildApp>>;
  beforeAll(async () => {
    metrics = new AuthMetrics({ defaultMetrics: false });
    const now = () => Date.now();
    const clients: ClientRegistry = {
      clients: [
        {
          client_id: 'app',
          client_secret_hash: hashClientSecret('s3cret'),
          display_name: 'App',
          redirect_uris: ['https://app.example.com/cb'],
          scopes: ['profile'],
          grant_types: ['authorization_code'],
          token_endpoint_auth_method: 'client_secret_post',
        },
      ],
    };
    const keys = await generateSigningJwks();
    const ctx: AuthContext = {
      settings: {
        issuer: 'https://id.example.com',
        audience: 'urn:rs',
        accessTokenTtlSeconds: 300,
        refreshTokenTtlSeconds: 3600,
        refreshFamilyMaxAgeSeconds: 86_400,
        refreshReuseGraceSeconds: 0,
        codeTtlSeconds: 60,
        interactionTtlSeconds: 600,
      },
      directory: createDirectory({ current: () => clients }, { current: () => ({ users: [] }) }),
      keys: createKeyRing(() => keys),
      stores: createMemoryStores(now),
      throttle: { attempt: async () => ({ allowed: true, retryAfterSeconds: 0 }) },
      // Two wrong secrets, then locked out.
      clientAuthThrottle: createClientAuthThrottle(
        { burst: 2, refillSeconds: 600, maxEntries: 100 },
        now,
      ),
      passwordGate: createPasswordGate({ concurrency: 1, queue: 1 }),
      metrics,
      now,
      secureCookies: true,
    };
    app = await buildApp({ ctx });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('labels a matched request with its template and an unmatched one as unmatched; /metrics is not on the public app', async () => {
    expect(
      (await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server?x=1' }))
        .statusCode,
    ).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/no/such/path/42' })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    expect(
      await value(metrics, 'portcullis_auth_requests_total', {
        endpoint: '/.well-known/oauth-authorization-server',
        method: 'GET',
        status_class: '2xx',
      }),
    ).toBe(1);
    expect(
      await value(metrics, 'portcullis_auth_requests_total', {
        endpoint: 'unmatched',
        method: 'GET',
        status_class: '4xx',
      }),
    ).toBe(2);
    const series = (await metrics.requests.get()).values.map((v) => String(v.labels['endpoint']));
    expect(series.filter((e) => e.includes('42') || e.includes('metrics'))).toEqual([]);
    expect(
      await value(metrics, 'portcullis_auth_request_duration_seconds', {
        endpoint: '/.well-known/oauth-authorization-server',
        le: '+Inf',
      }),
    ).toBe(1);
  });

  it('counts failed client authentications: rejected (401) until locked out, then throttled (429)', async () => {
    const wrong = () =>
      app.inject({
        method: 'POST',
        url: '/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=authorization_code&code=x&client_id=app&client_secret=nope',
      });
    expect([
      (await wrong()).statusCode,
      (await wrong()).statusCode,
      (await wrong()).statusCode,
    ]).toEqual([401, 401, 429]);
    expect(
      await value(metrics, 'portcullis_auth_client_auth_failures_total', { reason: 'rejected' }),
    ).toBe(2);
    expect(
      await value(metrics, 'portcullis_auth_client_auth_failures_total', { reason: 'throttled' }),
    ).toBe(1);
    expect(
      await value(metrics, 'portcullis_auth_requests_total', {
        endpoint: '/token',
        method: 'POST',
        status_class: '4xx',
      }),
    ).toBe(3);
    expect(
      await value(metrics, 'portcullis_auth_access_tokens_issued_total', {
        grant_type: 'authorization_code',
      }),
    ).toBe(0);
  });
});

describe('the metrics port', () => {
  const metrics = new AuthMetrics({ defaultMetrics: false });
  const server = buildMetricsServer(metrics.registry);
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('serves the registry in the Prometheus text format at /metrics, and nothing else', async () => {
    metrics.signIns.inc({ result: 'failed' });
    const res = await fetch(`${base}/metrics?ignored=1`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(metrics.registry.contentType);
    expect(await res.text()).toContain('portcullis_auth_sign_ins_total{result="failed"} 1\n');
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/token`, { method: 'POST' })).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('is AUTH_METRICS_PORT: 9090 by default, 0 for none, never the public port', () => {
    const base = { AUTH_CLIENTS_FILE: 'c', AUTH_USERS_FILE: 'u' };
    expect(loadAuthServerConfig(base).AUTH_METRICS_PORT).toBe(9090);
    expect(loadAuthServerConfig({ ...base, AUTH_METRICS_PORT: '0' }).AUTH_METRICS_PORT).toBe(0);
    expect(
      loadAuthServerConfig({ ...base, AUTH_METRICS_PORT: '0', PORT: '0' }).AUTH_METRICS_PORT,
    ).toBe(0);
    expect(() =>
      loadAuthServerConfig({ ...base, PORT: '9100', AUTH_METRICS_PORT: '9100' }),
    ).toThrow(/AUTH_METRICS_PORT: must differ from PORT/);
    expect(() => loadAuthServerConfig({ ...base, AUTH_METRICS_PORT: '70000' })).toThrow(
      /AUTH_METRICS_PORT/,
    );
  });
});

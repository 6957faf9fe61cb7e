// The sidecar's admin port (plain node:http, no web framework: it keeps the bundle small): liveness,
// readiness with its reason, Prometheus metrics, and clear answers to anything else.
import type { AddressInfo } from 'node:net';
import { Registry, Counter } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminServer } from '../../sidecar/admin.ts';

describe('sidecar admin server', () => {
  let notReady: string | null = null;
  const registry = new Registry();
  new Counter({ name: 'portcullis_test_total', help: 'a test counter', registers: [registry] }).inc(
    3,
  );
  const server = buildAdminServer({ registry, notReadyReason: () => notReady });
  let base: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('answers /healthz with ok', async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('ok');
  });

  it('answers /readyz with 200 when ready and 503 with the reason when not', async () => {
    notReady = null;
    const ready = await fetch(`${base}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([200, 'ready']);
    notReady = 'limiter store unavailable and onStoreError is deny';
    const not = await fetch(`${base}/readyz?verbose=1`);
    expect([not.status, await not.text()]).toEqual([
      503,
      'not ready: limiter store unavailable and onStoreError is deny',
    ]);
    notReady = null;
  });

  it('serves the registry in the Prometheus text format', async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(registry.contentType);
    expect(await res.text()).toContain('portcullis_test_total 3');
  });

  it('answers HEAD without a body', async () => {
    const res = await fetch(`${base}/healthz`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('refuses unknown paths with 404 and other methods with 405, as problem+json', async () => {
    const missing = await fetch(`${base}/constructor`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not Found' });
    const post = await fetch(`${base}/metrics`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(await post.json()).toMatchObject({ status: 405 });
  });
});

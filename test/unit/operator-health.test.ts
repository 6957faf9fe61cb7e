import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createHealthServer } from '../../operator/runtime/health-server.ts';
import { createMetrics } from '../../operator/runtime/metrics.ts';

const servers: Array<{ close: () => void }> = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function serve(ready: () => boolean) {
  const metrics = createMetrics({ defaultMetrics: false });
  const server = createHealthServer({
    registry: metrics.registry,
    ready,
    describe: () => (ready() ? 'leader' : 'standby'),
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  servers.push(server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, metrics };
}

describe('operator health endpoints', () => {
  it('/healthz answers while the process runs; /readyz only once caches synced', async () => {
    let synced = false;
    const { base } = await serve(() => synced);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.text()).toMatch(/not ready \(standby\)/);
    synced = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('/metrics serves the operator metrics in Prometheus text; other paths and methods are refused', async () => {
    const { base, metrics } = await serve(() => true);
    metrics.recordRequest({ verb: 'apply', resource: 'deployments', status: 200, durationMs: 3 });
    const res = await fetch(`${base}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    expect(await res.text()).toMatch(
      /portcullis_operator_kube_api_requests_total\{verb="apply",resource="deployments",code="200"\} 1/,
    );
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
  });
});

// Start and stop: an invalid config stops the process with a message naming the field; SIGTERM
// drains in-flight requests before exiting 0; the admin port answers health and readiness.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { startProgram } from '../harness/programs.ts';
import { sleep } from './sidecar-support.ts';

const it = test.extend('upstream', { scope: 'file' }, ({ start }) =>
  start.upstream((req, res) => {
    if (req.url === '/slow') setTimeout(() => res.end('drained'), 1000).unref();
    else res.end('OK');
  }),
);

describe('sidecar lifecycle', () => {
  it('an invalid config file stops the process, naming the field', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-bad-config-'));
    const file = path.join(dir, 'sidecar.yaml');
    writeFileSync(
      file,
      'upstream: { url: http://127.0.0.1:1 }\nroute: { id: all }\nlimiter: { replenishRate: 1, burstCapacity: 2, requestedTokens: 3, keyHeadr: X }\n',
    );
    const program = await startProgram({
      entry: 'sidecar/main.ts',
      args: ['--config', file],
      name: 'sidecar-bad-config',
    });
    const code = await new Promise((resolve) => program.child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    const out = program.lines.join('\n');
    expect(out).toContain('limiter.requestedTokens');
    expect(out).toContain('keyHeadr');
  });

  it('admin: /healthz, /readyz, /metrics; SIGTERM drains in-flight requests then exits 0', async ({
    start,
    upstream,
  }) => {
    const sidecar = await start.sidecar({
      upstream: { url: upstream.url },
      route: { id: 'all' },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    });
    const admin = `http://127.0.0.1:${sidecar.adminPort}`;
    expect(await (await request(`${admin}/healthz`)).body.text()).toBe('ok');
    const ready = await request(`${admin}/readyz`);
    expect(ready.statusCode).toBe(200);
    await ready.body.dump();

    // Metrics: requests by route and outcome, limiter decisions, store latency, proxy latency.
    for (let i = 0; i < 12; i++)
      await (await request(`${sidecar.url}/x`, { headers: { 'USER-ID': 'metrics' } })).body.dump();
    await (await request(`${sidecar.url}/x`)).body.dump();
    const metrics = await (await request(`${admin}/metrics`)).body.text();
    const value = (series: string) =>
      Number(
        new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)?.[1] ?? NaN,
      );
    // Burst 10 at 1 token/s: 10 forwarded (11 if a second passed during the 12), the rest limited.
    const forwarded = value('portcullis_sidecar_requests_total{route="all",outcome="forwarded"}');
    expect([10, 11]).toContain(forwarded);
    expect(value('portcullis_sidecar_requests_total{route="all",outcome="limited"}')).toBe(
      12 - forwarded,
    );
    expect(value('portcullis_sidecar_requests_total{route="all",outcome="bad_key"}')).toBe(1);
    expect(
      value(
        'portcullis_sidecar_limiter_decisions_total{route="all",rule="default",decision="allowed",shadow="false"}',
      ),
    ).toBe(forwarded);
    expect(
      value(
        'portcullis_sidecar_limiter_decisions_total{route="all",rule="default",decision="limited",shadow="false"}',
      ),
    ).toBe(12 - forwarded);
    expect(value('portcullis_sidecar_store_duration_seconds_count{store="memory"}')).toBe(12);
    expect(value('portcullis_sidecar_proxy_duration_seconds_count{route="all"}')).toBe(forwarded);
    // The latency the gateway adds is observed once per forwarded request, never for a refusal.
    expect(value('portcullis_sidecar_forward_duration_seconds_count{route="all"}')).toBe(forwarded);
    expect(metrics).toMatch(/portcullis_sidecar_store_errors_total/);
    expect(metrics).toMatch(/portcullis_sidecar_process_resident_memory_bytes \d+/);

    const inFlight = request(`${sidecar.url}/slow`, { headers: { 'USER-ID': 'u' } }).then(
      async (r) => ({ status: r.statusCode, body: await r.body.text() }),
    );
    await sleep(200);
    const exit = sidecar.program.stop('SIGTERM', 15_000);
    const res = await inFlight;
    expect(res).toEqual({ status: 200, body: 'drained' });
    expect(await exit).toBe(0);
    await sidecar.program.waitForLine(/"msg":"stopped"/);
  });
  it('SIGTERM keeps idle keep-alive connections open a moment: a request on one is answered, with Connection: close, not reset', async ({
    start,
    upstream,
  }) => {
    const sidecar = await start.sidecar({
      upstream: { url: upstream.url },
      route: { id: 'all' },
      limiter: { replenishRate: 100, burstCapacity: 100 },
      shutdownKeepAliveMs: 2000,
    });
    const client = new Client(sidecar.url, { pipelining: 1 });
    try {
      const first = await client.request({
        method: 'GET',
        path: '/x',
        headers: { 'USER-ID': 'keep-alive' },
      });
      await first.body.dump();
      expect(first.headers['connection']).not.toBe('close'); // the connection is kept for the next request
      const exit = sidecar.program.stop('SIGTERM', 15_000);
      await sleep(300);
      // The same connection, idle when SIGTERM came: closing it at once would race with this request.
      const second = await client.request({
        method: 'GET',
        path: '/x',
        headers: { 'USER-ID': 'keep-alive' },
      });
      expect(second.statusCode).toBe(200);
      expect(second.headers['connection']).toBe('close');
      await second.body.dump();
      expect(await exit).toBe(0);
    } finally {
      await client.destroy();
    }
  });
});

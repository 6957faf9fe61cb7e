// A flood of pipelined requests for one key, Redis healthy, onStoreError allow and the default
// 50 ms store timeout: 20 raw connections each write 1,000 GETs at once. The event loop is busy
// far longer than the store timeout while it parses them; a Redis reply that arrives while the
// loop is busy is still Redis' decision, so no more requests reach the upstream than the exact
// bucket admits, none is forwarded as "store unavailable", and the sidecar stays ready. Whatever
// the sidecar does not decide is refused explicitly (429, or 503 with Retry-After when it sheds).
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import type { RunningSidecar } from '../harness/programs.ts';

const rule = { replenishRate: 2, burstCapacity: 20, requestedTokens: 1 };
const CONNECTIONS = 20;
const PIPELINED = 1000;

/** Writes `count` pipelined GETs on one connection and reads the responses until the last one (or a close). */
function pipelined(
  port: number,
  count: number,
): Promise<{ statuses: number[]; retryAfter: number }> {
  const one = 'GET /healthcheck/ready HTTP/1.1\r\nHost: flood\r\nUSER-ID: flood-user\r\n\r\n';
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let heads = 0;
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const statuses: number[] = [];
      let retryAfter = 0;
      for (const m of Buffer.concat(chunks)
        .toString('latin1')
        .matchAll(/HTTP\/1\.1 (\d{3}) [^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)) {
        statuses.push(Number(m[1]));
        if (m[1] === '503' && /^retry-after: \d+\r$/im.test(m[2] ?? '')) retryAfter++;
      }
      resolve({ statuses, retryAfter });
    };
    const timer = setTimeout(finish, 120_000);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // Every response carries a body ending its head; counting 'HTTP/1.1 ' starts is enough to know when to stop.
      heads += chunk.toString('latin1').split('HTTP/1.1 ').length - 1;
      if (heads >= count) finish();
    });
    socket.on('error', reject);
    socket.on('close', finish);
    socket.write(one.repeat(count));
  });
}

async function metric(sidecar: RunningSidecar, pattern: RegExp): Promise<number> {
  const text = await (await request(`http://127.0.0.1:${sidecar.adminPort}/metrics`)).body.text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = pattern.exec(line);
    if (m !== null) sum += Number(m[1]);
  }
  return sum;
}

const it = test.extend('sidecar', { scope: 'file' }, ({ start, userService, redis }) =>
  start.sidecar(
    {
      upstream: { url: userService.url },
      route: { id: 'flood' },
      limiter: { ...rule },
      redis: { url: redis.url },
    },
    { name: 'sidecar-flood' },
  ),
);

describe('a flood of pipelined requests for one key, Redis healthy', () => {
  it('admits no more than the exact bound, forwards nothing as a store error, and stays ready', async ({
    sidecar,
  }) => {
    const t0 = performance.now();
    let readyFailures = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const res = await request(`http://127.0.0.1:${sidecar.adminPort}/readyz`);
        await res.body.dump();
        if (res.statusCode !== 200) readyFailures++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const results = await Promise.all(
      Array.from({ length: CONNECTIONS }, () => pipelined(sidecar.port, PIPELINED)),
    );
    const seconds = (performance.now() - t0) / 1000;
    probing = false;
    await probe;

    const statuses = results.flatMap((r) => r.statuses);
    const admitted = statuses.filter((s) => s === 200).length;
    const shed = statuses.filter((s) => s === 503).length;
    const other = statuses.filter((s) => s !== 200 && s !== 429 && s !== 503);
    // Every token the bucket can have held from the first request to the last response.
    const bound = rule.burstCapacity + Math.ceil(rule.replenishRate * seconds);
    expect(other).toEqual([]);
    expect(statuses.length).toBe(CONNECTIONS * PIPELINED);
    expect(admitted, `admitted over ${seconds.toFixed(1)} s (bound ${bound})`).toBeLessThanOrEqual(
      bound,
    );
    expect(admitted).toBeGreaterThanOrEqual(rule.burstCapacity);
    expect(
      await metric(
        sidecar,
        /^portcullis_sidecar_requests_total\{[^}]*outcome="store_error_allowed"[^}]*\} (\d+)$/,
      ),
    ).toBe(0);
    // Shedding answers 503 with Retry-After, and counts it.
    expect(results.reduce((n, r) => n + r.retryAfter, 0)).toBe(shed);
    expect(
      await metric(
        sidecar,
        /^portcullis_sidecar_requests_total\{[^}]*outcome="overloaded"[^}]*\} (\d+)$/,
      ),
    ).toBe(shed);
    expect(readyFailures).toBe(0);
    const ready = await request(`http://127.0.0.1:${sidecar.adminPort}/readyz`);
    expect(ready.statusCode).toBe(200);
    await ready.body.dump();
  });
});

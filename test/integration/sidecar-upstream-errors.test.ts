// Upstream down -> 502, upstream slow -> 504, both problem+json; the sidecar keeps
// serving afterwards.
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { freePort } from '../harness/ports.ts';

const limiter = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };

const it = test
  .extend('down', { scope: 'file' }, async ({ start }) =>
    start.sidecar(
      { upstream: { url: `http://127.0.0.1:${await freePort()}` }, route: { id: 'down' }, limiter },
      { name: 'sidecar-down' },
    ),
  )
  .extend('timeout', { scope: 'file' }, async ({ start }) => {
    // An upstream that answers /slow after 3 s and everything else at once.
    const slow = await start.upstream((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('late'), 3000).unref();
      else res.end('fast');
    });
    return start.sidecar(
      { upstream: { url: slow.url, timeoutMs: 300 }, route: { id: 'slow' }, limiter },
      { name: 'sidecar-slow' },
    );
  });

describe('upstream failures', () => {
  it('upstream refusing connections: 502 problem+json', async ({ down }) => {
    const res = await request(`${down.url}/anything?x=1`, { headers: { 'USER-ID': 'u' } });
    expect(res.statusCode).toBe(502);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({
      status: 502,
      title: 'Bad Gateway',
      type: 'urn:portcullis:problem:upstream-unavailable',
    });
  });

  it('upstream slower than upstream.timeoutMs: 504 problem+json, and the next request is fine', async ({
    down,
    timeout,
  }) => {
    const res = await request(`${timeout.url}/slow`, { headers: { 'USER-ID': 'u' } });
    expect(res.statusCode).toBe(504);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({
      status: 504,
      title: 'Gateway Timeout',
      type: 'urn:portcullis:problem:upstream-timeout',
    });
    const next = await request(`${timeout.url}/fast`, { headers: { 'USER-ID': 'u' } });
    expect(next.statusCode).toBe(200);
    expect(await next.body.text()).toBe('fast');
    expect(down.program.exited() || timeout.program.exited()).toBe(false);
  });
});

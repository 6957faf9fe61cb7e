// Issue 2 test 8: upstream down -> 502, upstream slow -> 504, both problem+json; the sidecar keeps
// serving afterwards.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../harness/ports.ts';
import { startSidecar, type RunningSidecar } from './sidecar-support.ts';

const limiter = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };

describe('upstream failures', () => {
  let slow: http.Server;
  let down: RunningSidecar;
  let timeout: RunningSidecar;

  beforeAll(async () => {
    // An upstream that answers /slow after 3 s and everything else at once.
    slow = http.createServer((req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('late'), 3000).unref();
      else res.end('fast');
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const slowPort = (slow.address() as AddressInfo).port;
    down = await startSidecar({ name: 'sidecar-down', upstream: { url: `http://127.0.0.1:${await freePort()}` }, route: { id: 'down' }, limiter });
    timeout = await startSidecar({
      name: 'sidecar-slow',
      upstream: { url: `http://127.0.0.1:${slowPort}`, timeoutMs: 300 },
      route: { id: 'slow' },
      limiter,
    });
  });
  afterAll(async () => {
    await down?.program.stop();
    await timeout?.program.stop();
    slow?.closeAllConnections();
    await new Promise((r) => slow?.close(r));
  });

  it('upstream refusing connections: 502 problem+json', async () => {
    const res = await request(`${down.url}/anything?x=1`, { headers: { 'USER-ID': 'u' } });
    expect(res.statusCode).toBe(502);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({ status: 502, title: 'Bad Gateway', type: 'urn:portcullis:problem:upstream-unavailable' });
  });

  it('upstream slower than upstream.timeoutMs: 504 problem+json, and the next request is fine', async () => {
    const res = await request(`${timeout.url}/slow`, { headers: { 'USER-ID': 'u' } });
    expect(res.statusCode).toBe(504);
    expect(res.headers['content-type']).toBe('application/problem+json');
    expect(await res.body.json()).toMatchObject({ status: 504, title: 'Gateway Timeout', type: 'urn:portcullis:problem:upstream-timeout' });
    const next = await request(`${timeout.url}/fast`, { headers: { 'USER-ID': 'u' } });
    expect(next.statusCode).toBe(200);
    expect(await next.body.text()).toBe('fast');
    expect(down.program.exited() || timeout.program.exited()).toBe(false);
  });
});

// A client that goes away mid-response: the sidecar aborts its upstream request (the upstream
// sees its connection close instead of streaming on to nobody), counts the request as no longer in
// flight (a SIGTERM right after drains at once instead of waiting out shutdownGraceMs), and keeps
// serving. One 'close' listener per response does both (sidecar/exchange.ts).
import net from 'node:net';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { sleep } from './sidecar-support.ts';

/** An upstream whose /endless response streams a chunk every 20 ms until its connection closes. */
const it = test
  .extend('endless', { scope: 'file' }, async ({ start }) => {
    let closed!: (chunks: number) => void;
    const endless = {
      chunksWritten: 0,
      /** Resolves when the upstream's endless response was closed under it. */
      upstreamClosed: new Promise<number>((resolve) => (closed = resolve)),
      url: '',
    };
    endless.url = (
      await start.upstream((req, res) => {
        if (req.url !== '/endless') {
          res.end('OK');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => {
          res.write(`chunk ${endless.chunksWritten++}\n`);
        }, 20);
        res.on('close', () => {
          clearInterval(timer);
          closed(endless.chunksWritten);
        });
      })
    ).url;
    return endless;
  })
  .extend('sidecar', { scope: 'file' }, ({ start, endless }) =>
    start.sidecar({
      upstream: { url: endless.url },
      route: { id: 'all' },
      limiter: { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 },
      shutdownGraceMs: 20_000,
    }),
  );

describe('client gone mid-response', () => {
  it('aborts the upstream request, ends the in-flight count, and serves the next request', async ({
    endless,
    sidecar,
  }) => {
    const { upstreamClosed } = endless;
    const socket = net.connect(sidecar.port, '127.0.0.1');
    let received = '';
    const firstChunk = new Promise<void>((resolve) =>
      socket.on('data', (d: Buffer) => {
        received += d.toString('latin1');
        if (received.includes('chunk 1')) resolve();
      }),
    );
    socket.write('GET /endless HTTP/1.1\r\nHost: gw\r\nUSER-ID: gone\r\n\r\n');
    await firstChunk;
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    const goneAt = Date.now();
    socket.destroy();

    // The upstream's response is closed under it soon after, not streamed on for ever.
    const chunksAtClose = await Promise.race([upstreamClosed, sleep(5000).then(() => -1)]);
    expect(chunksAtClose, 'the upstream response was never aborted').toBeGreaterThan(0);
    expect(Date.now() - goneAt).toBeLessThan(5000);
    await sleep(200);
    expect(endless.chunksWritten, 'the upstream kept writing after the abort').toBe(chunksAtClose);

    // The sidecar serves on.
    const next = await request(`${sidecar.url}/ready`, { headers: { 'USER-ID': 'next' } });
    expect(next.statusCode).toBe(200);
    expect(await next.body.text()).toBe('OK');

    // Nothing is left in flight: SIGTERM drains at once (a leaked count would wait out the 20 s grace).
    const stoppedAt = Date.now();
    expect(await sidecar.program.stop('SIGTERM', 15_000)).toBe(0);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000);
    expect(sidecar.program.lines.join('\n')).not.toMatch(/shutdown grace elapsed/);
  });
});

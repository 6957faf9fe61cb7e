// A forwarding loop ends: a route whose upstream leads back to its own gateway (here through a
// plain HTTP forwarder, as a second route or an ingress would) passes each request around at
// most MAX_HOPS times, then answers 508 problem+json and logs a warning, instead of looping until
// sockets or memory run out. The gateway counts itself in Portcullis-Hops on the way up.
import http from 'node:http';
import { describe, expect } from 'vitest';
import { MAX_HOPS } from '../../sidecar/hop-limit.ts';
import { test } from '../harness/fixtures.ts';
import { rawRequest } from './sidecar-support.ts';

/** Where the forwarder sends everything: the sidecar in front of it (known once it listens). */
let sidecarPort = 0;
/** Portcullis-Hops of each request the forwarder saw, in order. */
const seenHops: string[] = [];

const it = test
  .extend('forwarder', { scope: 'file' }, ({ start }) =>
    start.upstream((req, res) => {
      seenHops.push(String(req.headers['portcullis-hops']));
      const up = http.request(
        {
          host: '127.0.0.1',
          port: sidecarPort,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      up.on('error', () => res.destroy());
      req.pipe(up);
    }),
  )
  .extend('sidecar', { scope: 'file' }, async ({ start, forwarder }) => {
    const sidecar = await start.sidecar({
      upstream: { url: forwarder.url },
      route: { id: 'loop' },
      limiter: { replenishRate: 1000, burstCapacity: 1000, requestedTokens: 1 },
    });
    sidecarPort = sidecar.port;
    return sidecar;
  });

describe('forwarding loops', () => {
  it(`a request back at its own gateway is refused with 508 after ${MAX_HOPS} hops, the loop ends, and a warning says so`, async ({
    sidecar,
  }) => {
    const res = await rawRequest(
      sidecar.port,
      'GET /anything HTTP/1.1\r\nHost: loop.test\r\nUSER-ID: looper\r\n\r\n',
    );
    expect(res.status).toBe(508);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({
      status: 508,
      title: 'Loop Detected',
      type: 'urn:portcullis:problem:loop-detected',
    });
    // The forwarder saw the count grow by one per pass, MAX_HOPS passes in all.
    expect(seenHops).toEqual(Array.from({ length: MAX_HOPS }, (_, i) => String(i + 1)));
    await sidecar.program.waitForLine(/"level":40.*forwarding loop, request refused/);
  });

  it("a client's own Portcullis-Hops is counted on, not trusted to reset the count", async ({
    sidecar,
  }) => {
    seenHops.length = 0;
    const res = await rawRequest(
      sidecar.port,
      `GET /anything HTTP/1.1\r\nHost: loop.test\r\nUSER-ID: looper\r\nPortcullis-Hops: ${MAX_HOPS - 2}\r\n\r\n`,
    );
    expect(res.status).toBe(508);
    expect(seenHops).toEqual([String(MAX_HOPS - 1), String(MAX_HOPS)]);
    seenHops.length = 0;
    const junk = await rawRequest(
      sidecar.port,
      'GET /anything HTTP/1.1\r\nHost: loop.test\r\nUSER-ID: looper\r\nPortcullis-Hops: -5\r\n\r\n',
    );
    expect(junk.status).toBe(508);
    expect(seenHops).toHaveLength(MAX_HOPS);
  });
});

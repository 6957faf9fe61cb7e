// Proxy fidelity. Method, path, query and headers arrive unchanged at the upstream
// (hop-by-hop headers removed, X-Forwarded-* added); a 10 MB streamed upload arrives byte for byte;
// a streamed download arrives unchanged at the client.
import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import { rawRequest } from './sidecar-support.ts';

interface Seen {
  method: string;
  url: string;
  rawHeaders: string[];
  bytes: number;
  sha256: string;
}

const download = randomBytes(10 * 1024 * 1024);
const downloadSha = createHash('sha256').update(download).digest('hex');

/** The last request the upstream received. */
let last: Seen | undefined;

const it = test
  .extend('upstream', { scope: 'file' }, ({ start }) =>
    start.upstream((req, res) => {
      const hash = createHash('sha256');
      let bytes = 0;
      req.on('data', (c: Buffer) => {
        hash.update(c);
        bytes += c.length;
      });
      req.on('end', () => {
        last = {
          method: req.method ?? '',
          url: req.url ?? '',
          rawHeaders: req.rawHeaders,
          bytes,
          sha256: hash.digest('hex'),
        };
        if (req.url === '/download') {
          // Chunked, in 64 KiB pieces, with backpressure.
          res.writeHead(200, {
            'content-type': 'application/octet-stream',
            'x-sha256': downloadSha,
          });
          Readable.from(
            (function* () {
              for (let i = 0; i < download.length; i += 65536)
                yield download.subarray(i, i + 65536);
            })(),
          ).pipe(res);
          return;
        }
        res.writeHead(201, 'Created Here', [
          'content-type',
          'application/json',
          'set-cookie',
          'a=1; Path=/',
          'set-cookie',
          'b=2; Path=/',
          'x-upstream',
          'yes',
          'connection',
          'x-hop',
          'x-hop',
          'must not pass',
          'keep-alive',
          'timeout=5',
        ]);
        res.end(JSON.stringify({ bytes, sha256: last.sha256 }));
      });
    }),
  )
  .extend('sidecar', { scope: 'file' }, ({ start, upstream }) =>
    start.sidecar({
      upstream: { url: upstream.url },
      route: { id: 'all' },
      limiter: { replenishRate: 1000, burstCapacity: 1000, requestedTokens: 1 },
    }),
  );

describe('proxy fidelity', () => {
  const header = (raw: string[], name: string) => {
    const values: string[] = [];
    for (let i = 0; i < raw.length; i += 2)
      if (raw[i]!.toLowerCase() === name) values.push(raw[i + 1]!);
    return values;
  };

  it.for(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'])(
    '%s: method, path, query and headers arrive unchanged',
    async (method, { sidecar }) => {
      const path = '/a/b%20c/%E2%9C%93/?q=1&q=2&empty=&enc=%26%3D#';
      const res = await rawRequest(
        sidecar.port,
        [
          `${method} ${path.replace('#', '')} HTTP/1.1`,
          'Host: portcullis.test:8080',
          'USER-ID: fidelity',
          'X-Custom: one',
          'x-custom: two',
          'X-Forwarded-For: 203.0.113.7',
          'Accept: application/json',
          'Connection: close, X-Strip-Me',
          'X-Strip-Me: gone',
          'Keep-Alive: timeout=1',
          'TE: trailers',
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
      );
      expect(res.status).toBe(201);
      expect(last).toMatchObject({ method, url: path.replace('#', '') });
      const seen = last!;
      expect(header(seen.rawHeaders, 'host')).toEqual(['portcullis.test:8080']);
      expect(header(seen.rawHeaders, 'user-id')).toEqual(['fidelity']);
      expect(header(seen.rawHeaders, 'x-custom')).toEqual(['one', 'two']);
      expect(header(seen.rawHeaders, 'accept')).toEqual(['application/json']);
      // Hop-by-hop: gone, including the header the Connection header named.
      // (The upstream hop's own Connection header, keep-alive or close, is undici's.)
      for (const h of ['keep-alive', 'te', 'x-strip-me'])
        expect(header(seen.rawHeaders, h)).toEqual([]);
      for (const v of header(seen.rawHeaders, 'connection'))
        expect(['keep-alive', 'close']).toContain(v);
      // X-Forwarded-*: the client address appended, proto and host added.
      expect(header(seen.rawHeaders, 'x-forwarded-for')).toEqual(['203.0.113.7, 127.0.0.1']);
      expect(header(seen.rawHeaders, 'x-forwarded-proto')).toEqual(['http']);
      expect(header(seen.rawHeaders, 'x-forwarded-host')).toEqual(['portcullis.test:8080']);

      // The response: status, reason, repeated headers kept; hop-by-hop dropped; limiter headers added.
      expect(res.head).toMatch(/^HTTP\/1\.1 201 Created Here/);
      expect(res.head).toContain('set-cookie: a=1; Path=/\r\nset-cookie: b=2; Path=/');
      expect(res.headers.get('x-upstream')).toBe('yes');
      expect(res.headers.has('x-hop')).toBe(false);
      expect(res.headers.get('ratelimit-limit')).toBe('1000');
      if (method !== 'HEAD') expect(JSON.parse(res.body)).toMatchObject({ bytes: 0 });
    },
  );

  it('a 10 MB streamed (chunked) upload arrives byte for byte', async ({ sidecar }) => {
    const upload = randomBytes(10 * 1024 * 1024);
    const sha = createHash('sha256').update(upload).digest('hex');
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < upload.length; i += 100_000) yield upload.subarray(i, i + 100_000);
      })(),
    );
    const res = await request(`${sidecar.url}/upload`, {
      method: 'PUT',
      headers: { 'USER-ID': 'fidelity', 'content-type': 'application/octet-stream' },
      body,
    });
    expect(res.statusCode).toBe(201);
    expect(await res.body.json()).toEqual({ bytes: upload.length, sha256: sha });
    expect(header(last!.rawHeaders, 'transfer-encoding')).toEqual(['chunked']);
  });

  it('a 10 MB upload with Content-Length arrives byte for byte', async ({ sidecar }) => {
    const upload = randomBytes(10 * 1024 * 1024);
    const sha = createHash('sha256').update(upload).digest('hex');
    const res = await request(`${sidecar.url}/upload-fixed`, {
      method: 'POST',
      headers: { 'USER-ID': 'fidelity' },
      body: upload,
    });
    expect(res.statusCode).toBe(201);
    expect(await res.body.json()).toEqual({ bytes: upload.length, sha256: sha });
    expect(header(last!.rawHeaders, 'content-length')).toEqual([String(upload.length)]);
  });

  it('a 10 MB streamed download arrives unchanged', async ({ sidecar }) => {
    const res = await request(`${sidecar.url}/download`, { headers: { 'USER-ID': 'fidelity' } });
    expect(res.statusCode).toBe(200);
    const hash = createHash('sha256');
    let bytes = 0;
    for await (const chunk of res.body) {
      hash.update(chunk as Buffer);
      bytes += (chunk as Buffer).length;
    }
    expect(bytes).toBe(download.length);
    expect(hash.digest('hex')).toBe(downloadSha);
    expect(res.headers['x-sha256']).toBe(downloadSha);
  });
});

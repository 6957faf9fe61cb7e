// Soak finding: a client that declared a body (Content-Length: 1000) and never sent it kept its
// connection open forever (the server runs with requestTimeout: 0). listen.requestTimeoutMs is an
// idle timeout on the request body: a stalled body gets 408 problem+json (or a close when a
// response already started), while an upload that keeps sending bytes may take as long as it needs.
import net from 'node:net';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';

/** listen.requestTimeoutMs of this suite, ms. */
const IDLE_MS = 800;
/** listen.requestBodyMinBytesPerSecond of this suite: at least 16 bytes each IDLE_MS. */
const MIN_RATE = 20;

interface Exchange {
  /** Everything the sidecar sent until it closed the connection. */
  readonly text: string;
  readonly status: number;
}

/** Opens a raw connection, writes `head` and `chunks` (one every `everyMs`), and reads until close. */
function exchange(
  port: number,
  head: string,
  chunks: string[] = [],
  everyMs = 0,
): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(received).toString('utf8');
      resolve({ text, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0) });
    });
    socket.write(head);
    let i = 0;
    const next = () => {
      if (i >= chunks.length || socket.destroyed) return;
      socket.write(chunks[i++] as string);
      setTimeout(next, everyMs);
    };
    if (chunks.length > 0) setTimeout(next, everyMs);
  });
}

const it = test.extend('sidecar', { scope: 'file' }, async ({ start }) => {
  // Echoes the number of body bytes it read, after reading them all.
  const upstream = await start.upstream((req, res) => {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => res.end(`read ${n}`));
  });
  return start.sidecar(
    {
      listen: { requestTimeoutMs: IDLE_MS, requestBodyMinBytesPerSecond: MIN_RATE },
      upstream: { url: upstream.url },
      route: { id: 'body' },
      limiter: { replenishRate: 100, burstCapacity: 100 },
    },
    { name: 'sidecar-body-timeout' },
  );
});

describe('listen.requestTimeoutMs: stalled request bodies', () => {
  it('answers 408 problem+json and closes when a declared body never arrives', async ({
    sidecar,
  }) => {
    const r = await exchange(
      sidecar.port,
      'POST /upload HTTP/1.1\r\nHost: x\r\nUSER-ID: stall\r\nContent-Length: 1000\r\n\r\n0123456789',
    );
    expect(r.status).toBe(408);
    expect(r.text).toMatch(/content-type: application\/problem\+json/i);
    expect(r.text).toMatch(/connection: close/i);
    const body = JSON.parse(r.text.slice(r.text.indexOf('\r\n\r\n') + 4)) as {
      status: number;
      title: string;
    };
    expect(body).toMatchObject({ status: 408, title: 'Request Timeout' });
  });

  it('answers 408 for a chunked body that stops mid-way', async ({ sidecar }) => {
    const r = await exchange(
      sidecar.port,
      'POST /upload HTTP/1.1\r\nHost: x\r\nUSER-ID: stall-chunked\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n',
    );
    expect(r.status).toBe(408);
  });

  it('closes the connection when the answer went out before the body (a bad key) and the body never comes', async ({
    sidecar,
  }) => {
    // Before the fix the socket lived on until keepAliveTimeout (65 s): the 10 s test timeout catches that.
    const r = await exchange(
      sidecar.port,
      'POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n',
    );
    expect(r.status).toBe(400); // answered at once; then the stalled body ends the connection
  }, 10_000);

  it('lets a slow upload through that takes longer than the timeout in total but never pauses that long', async ({
    sidecar,
  }) => {
    // 12 chunks of 10 bytes, one every IDLE_MS / 4: about 3 x IDLE_MS in total, no gap near IDLE_MS.
    const chunks = Array.from({ length: 12 }, (_, i) => String(i).padStart(10, '-'));
    const r = await exchange(
      sidecar.port,
      'POST /upload HTTP/1.1\r\nHost: x\r\nUSER-ID: slow-upload\r\nContent-Length: 120\r\nConnection: close\r\n\r\n',
      chunks,
      IDLE_MS / 4,
    );
    expect(r.status).toBe(200);
    expect(r.text.endsWith('read 120')).toBe(true);
  });

  it('answers 408 for a body that never pauses for IDLE_MS but trickles below the rate floor', async ({
    sidecar,
  }) => {
    // A byte every IDLE_MS / 4: 4 bytes a window where MIN_RATE asks for 16. Unchecked, such a body
    // holds its upstream connection for as long as it likes.
    const chunks = Array.from({ length: 40 }, () => 'x');
    const r = await exchange(
      sidecar.port,
      'POST /upload HTTP/1.1\r\nHost: x\r\nUSER-ID: trickle\r\nContent-Length: 40\r\n\r\n',
      chunks,
      IDLE_MS / 4,
    );
    expect(r.status).toBe(408);
    expect(r.text).toContain('application/problem+json');
    expect(r.text).toContain('fewer than 16 bytes');
  });
});

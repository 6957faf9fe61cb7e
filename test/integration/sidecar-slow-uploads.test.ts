// Slow uploads of one user: each admitted request whose body trickles in holds an upstream
// connection until its body ends. Unbounded, 130 uploads sending a byte a minute held all 128
// connections and every other user's request waited behind them. With limiter.maxInFlightPerKey
// (and at most a quarter of upstream.connections per key) the user's further uploads are refused
// with 429 before they are charged, and another user is served from the connections left.
import net from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';

const CONNECTIONS = 8;
/** More slow uploads than the upstream has connections. */
const UPLOADS = 10;
/** A quarter of CONNECTIONS (maxInFlightPerKey's default, 32, is larger). */
const PER_KEY = 2;

describe('slow uploads of one user', () => {
  const stack = perDescribe(async (start) => {
    const upstream = { uploading: 0 };
    const server = await start.upstream((req, res) => {
      if (req.method !== 'POST') {
        res.end('OK');
        return;
      }
      // Answers once the whole body has arrived; until then the upload holds its connection.
      upstream.uploading++;
      req.resume();
      req.on('end', () => res.end('stored'));
      req.on('close', () => upstream.uploading--);
    });
    const sidecar = await start.sidecar({
      upstream: { url: server.url, connections: CONNECTIONS },
      route: { id: 'uploads', path: '/**' },
      // Ten requests empty a bucket (a token a second comes back).
      limiter: { replenishRate: 1, burstCapacity: 100, requestedTokens: 10 },
      logLevel: 'warn',
    });
    return { upstream, sidecar, sockets: [] as net.Socket[] };
  });

  /** Starts an upload of 1,000 bytes and sends one; resolves with the status line once answered. */
  const slowUpload = (user: string) => {
    const socket = net.connect(stack.sidecar.port, '127.0.0.1');
    stack.sockets.push(socket);
    let received = '';
    const answered = new Promise<string>((resolve) => {
      socket.on('data', (d: Buffer) => {
        received += d.toString('latin1');
        if (received.includes('\r\n\r\n')) resolve(received);
      });
    });
    socket.on('error', () => undefined);
    socket.write(
      `POST /upload HTTP/1.1\r\nHost: gw\r\nUSER-ID: ${user}\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\nx`,
    );
    return answered;
  };

  it('refuses the uploads past the per-key bound before charging them, and serves another user', async () => {
    const { upstream, sidecar, sockets } = stack;
    try {
      const answers: string[] = [];
      for (let i = 0; i < UPLOADS; i++) void slowUpload('slow').then((a) => answers.push(a));
      // Wait until every upload either reached the upstream or was answered (or the pool is full).
      const deadline = Date.now() + 20_000;
      while (
        upstream.uploading + answers.length < UPLOADS &&
        upstream.uploading < CONNECTIONS &&
        Date.now() < deadline
      ) {
        await new Promise((r) => setTimeout(r, 50));
      }
      // Another user's GET is served (it used to wait behind the uploads; the signal only ends a hang).
      const res = await request(`${sidecar.url}/page`, {
        headers: { 'USER-ID': 'other' },
        signal: AbortSignal.timeout(20_000),
      });
      expect(res.statusCode).toBe(200);
      expect(await res.body.text()).toBe('OK');

      expect(upstream.uploading).toBe(PER_KEY);
      expect(answers).toHaveLength(UPLOADS - PER_KEY);
      for (const a of answers) {
        expect(a).toMatch(/^HTTP\/1\.1 429 /);
        expect(a.toLowerCase()).toContain('content-type: application/problem+json');
        expect(a.toLowerCase()).toContain('retry-after: 1');
      }
      // Only bodies still arriving count: the user's own GET is served meanwhile, and its next
      // upload is refused.
      const busy = await request(`${sidecar.url}/page`, { headers: { 'USER-ID': 'slow' } });
      await busy.body.dump();
      expect(busy.statusCode).toBe(200);
      const post = await request(`${sidecar.url}/upload`, {
        method: 'POST',
        body: 'complete',
        headers: { 'USER-ID': 'slow' },
      });
      await post.body.dump();
      expect(post.statusCode).toBe(429);

      // Once they are gone the user is served again; the refusals were not charged: the bucket
      // lost only the uploads forwarded and the GETs (charged, the 9 refusals would have emptied it).
      for (const s of sockets) s.destroy();
      const gone = Date.now() + 20_000;
      while (upstream.uploading > 0 && Date.now() < gone)
        await new Promise((r) => setTimeout(r, 50));
      const own = await request(`${sidecar.url}/page`, { headers: { 'USER-ID': 'slow' } });
      await own.body.dump();
      expect(own.statusCode).toBe(200);
      expect(Number(own.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(
        100 - (PER_KEY + 2) * 10,
      );

      const metrics = await (
        await request(`http://127.0.0.1:${sidecar.adminPort}/metrics`)
      ).body.text();
      expect(metrics).toContain(
        `portcullis_sidecar_requests_total{route="uploads",outcome="key_in_flight"} ${UPLOADS - PER_KEY + 1}`,
      );
    } finally {
      for (const s of sockets) s.destroy();
    }
  }, 60_000);
});

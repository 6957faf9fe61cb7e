// HTTP Upgrade (WebSocket) through the sidecar: admitted like a request (route, USER-ID, one
// take from the bucket), refusals are problem+json on the raw socket, an admitted upgrade is
// tunnelled to a real WebSocket upstream (the `ws` package), and a close on either side closes
// the other, with every socket counted on both ends.
import http from 'node:http';
import type { Duplex } from 'node:stream';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import WebSocket, { WebSocketServer } from 'ws';
import { freePort } from '../harness/ports.ts';
import { eventually } from '../harness/eventually.ts';
import { startSidecar, type RunningSidecar } from '../harness/programs.ts';
import { rawRequest } from './sidecar-support.ts';

const upgradeRequest = (path: string, extra = '') =>
  `GET ${path} HTTP/1.1\r\nHost: gw.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

describe('HTTP Upgrade (WebSocket) through the sidecar', () => {
  let upstream: http.Server;
  let wss: WebSocketServer;
  let sidecar: RunningSidecar;
  let deadSidecar: RunningSidecar;
  /** Upstream TCP connections accepted in total; upgraded sockets open now (plain requests use the pool). */
  const upstreamConnections = { accepted: 0, upgraded: new Set<Duplex>() };
  const upgradeHeaders: http.IncomingHttpHeaders[] = [];
  const clients: WebSocket[] = [];

  beforeAll(async () => {
    upstream = http.createServer((_req, res) => res.end('plain OK'));
    upstream.on('connection', () => upstreamConnections.accepted++);
    wss = new WebSocketServer({ noServer: true });
    wss.on('connection', (ws) =>
      ws.on('message', (data, isBinary) => ws.send(isBinary ? data : `echo: ${String(data)}`)),
    );
    upstream.on('upgrade', (req, socket, head) => {
      upgradeHeaders.push(req.headers);
      upstreamConnections.upgraded.add(socket);
      socket.on('close', () => upstreamConnections.upgraded.delete(socket));
      if (req.url === '/hang') {
        // Never answers the upgrade, but reads, and closes when the other side does.
        socket.resume();
        socket.on('end', () => socket.end());
        return;
      }
      if (req.url === '/forbidden') {
        socket.end(
          'HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: 9\r\n\r\nforbidden',
        );
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const limiter = { replenishRate: 1, burstCapacity: 10, requestedTokens: 5 }; // two pass, a third within 5 s is limited
    sidecar = await startSidecar({
      upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
      route: { id: 'ws', path: '/**' },
      limiter,
    });
    deadSidecar = await startSidecar(
      {
        upstream: { url: `http://127.0.0.1:${await freePort()}` },
        route: { id: 'dead', path: '/**' },
        limiter,
      },
      { name: 'sidecar-dead' },
    );
  });
  afterAll(async () => {
    for (const c of clients) c.terminate();
    await Promise.all([sidecar?.program.stop(), deadSidecar?.program.stop()]);
    wss?.close();
    upstream?.closeAllConnections();
    await new Promise((r) => upstream?.close(r));
  });

  const connect = (user: string | undefined, path = '/chat') =>
    new Promise<{ ws: WebSocket; res: http.IncomingMessage }>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${sidecar.port}${path}`, {
        headers: user === undefined ? {} : { 'USER-ID': user },
      });
      clients.push(ws);
      ws.once('upgrade', (res) => ws.once('open', () => resolve({ ws, res })));
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`unexpected ${res.statusCode}`)),
      );
      ws.once('error', reject);
    });
  const nextMessage = (ws: WebSocket) =>
    new Promise<string>((resolve) => ws.once('message', (d) => resolve(String(d))));
  const closed = (ws: WebSocket) =>
    new Promise<number>((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) resolve(-1);
      else ws.once('close', (code) => resolve(code));
    });
  const tunnels = async () => {
    const text = await (await fetch(`http://127.0.0.1:${sidecar.adminPort}/metrics`)).text();
    return Number(/^portcullis_sidecar_upgrade_tunnels (\S+)$/m.exec(text)?.[1]);
  };
  const noSocketsLeft = async () => {
    await eventually(
      'no upgraded upstream socket left',
      () => upstreamConnections.upgraded.size === 0,
      10_000,
      50,
    );
    await eventually(
      'no tunnel left in the sidecar',
      async () => (await tunnels()) === 0,
      10_000,
      50,
    );
    expect(wss.clients.size).toBe(0);
  };

  it('a client exchanges messages with the upstream through the sidecar; the upgrade carries X-Forwarded-* and the limiter headers', async () => {
    const { ws, res } = await connect('alice');
    expect(res.statusCode).toBe(101);
    expect(res.headers['ratelimit-limit']).toBe('10');
    expect(res.headers['ratelimit-remaining']).toBe('5');
    for (const text of ['hello', 'second', 'x'.repeat(70_000)]) {
      const reply = nextMessage(ws);
      ws.send(text);
      expect(await reply).toBe(`echo: ${text}`);
    }
    const binary = Buffer.from([0, 1, 2, 255]);
    const reply = new Promise<Buffer>((resolve) => ws.once('message', (d) => resolve(d as Buffer)));
    ws.send(binary);
    expect(Buffer.compare(await reply, binary)).toBe(0);
    const seen = upgradeHeaders.at(-1) ?? {};
    expect(seen['user-id']).toBe('alice');
    expect(seen['x-forwarded-for']).toBe('127.0.0.1');
    expect(seen['x-forwarded-proto']).toBe('http');
    expect(seen['x-forwarded-host']).toBe(`127.0.0.1:${sidecar.port}`);
    expect(seen['upgrade']).toBe('websocket');
    expect(await tunnels()).toBe(1);
    // A plain request on the same port still goes the normal way.
    expect(
      await (await fetch(`${sidecar.url}/plain`, { headers: { 'USER-ID': 'carol' } })).text(),
    ).toBe('plain OK');
    ws.close();
    await closed(ws);
    await noSocketsLeft();
  });

  it('an upgrade without USER-ID gets 400 problem+json and never reaches the upstream', async () => {
    const before = upstreamConnections.accepted;
    const res = await rawRequest(sidecar.port, upgradeRequest('/chat'));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'urn:portcullis:problem:invalid-user-id',
      status: 400,
    });
    expect(upstreamConnections.accepted).toBe(before);
  });

  it('over the limit an upgrade gets 429 problem+json with Retry-After and never reaches the upstream', async () => {
    const a = await connect('bob');
    const b = await connect('bob');
    const before = upstreamConnections.accepted;
    const res = await rawRequest(sidecar.port, upgradeRequest('/chat', 'USER-ID: bob\r\n'));
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'urn:portcullis:problem:rate-limited',
      status: 429,
    });
    expect(upstreamConnections.accepted).toBe(before);
    a.ws.close();
    b.ws.close();
    await Promise.all([closed(a.ws), closed(b.ws)]);
    await noSocketsLeft();
  });

  it('an upstream refusing connections gets 502 problem+json; one declining the upgrade has its answer relayed', async () => {
    const res = await rawRequest(deadSidecar.port, upgradeRequest('/chat', 'USER-ID: dave\r\n'));
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(JSON.parse(res.body)).toMatchObject({
      type: 'urn:portcullis:problem:upstream-unavailable',
      status: 502,
    });
    const declined = await rawRequest(
      sidecar.port,
      upgradeRequest('/forbidden', 'USER-ID: erin\r\n'),
    );
    expect(declined.status).toBe(403);
    expect(declined.body).toBe('forbidden');
    expect(declined.headers.get('ratelimit-limit')).toBe('10');
    await noSocketsLeft();
  });

  it('SIGTERM with a tunnel open: the sidecar closes it and exits 0 (a tunnel does not hold shutdown)', async () => {
    const s = await startSidecar(
      {
        upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
        route: { id: 'bye', path: '/**' },
        limiter: { replenishRate: 1, burstCapacity: 10 },
      },
      { name: 'sidecar-bye' },
    );
    const ws = new WebSocket(`ws://127.0.0.1:${s.port}/chat`, { headers: { 'USER-ID': 'jo' } });
    clients.push(ws);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const exit = s.program.stop('SIGTERM', 8000);
    expect(await closed(ws)).toBe(1006);
    expect(await exit).toBe(0);
    await noSocketsLeft();
  });

  it('an upstream not answering the upgrade in time: 504; a client leaving first takes the upstream socket with it', async () => {
    const s = await startSidecar(
      {
        upstream: {
          url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
          timeoutMs: 2000,
        }, // generous: the client must leave well before it
        route: { id: 'slow', path: '/**' },
        limiter: { replenishRate: 1, burstCapacity: 10 },
      },
      { name: 'sidecar-slow' },
    );
    try {
      const res = await rawRequest(s.port, upgradeRequest('/hang', 'USER-ID: kim\r\n'));
      expect(res.status).toBe(504);
      expect(JSON.parse(res.body)).toMatchObject({
        type: 'urn:portcullis:problem:upstream-timeout',
        status: 504,
      });
      await eventually(
        'upstream socket of the timed-out upgrade closed',
        () => upstreamConnections.upgraded.size === 0,
        10_000,
        50,
      );

      const socket = net.connect(s.port, '127.0.0.1');
      socket.write(upgradeRequest('/hang', 'USER-ID: lou\r\n'));
      await eventually(
        'upgrade reached the upstream',
        () => upstreamConnections.upgraded.size === 1,
        10_000,
        50,
      );
      socket.destroy();
      await eventually(
        'upstream socket closed after the client left',
        () => upstreamConnections.upgraded.size === 0,
        10_000,
        50,
      );
      // Only the first counts as an upstream error: the second was the client's doing.
      const metrics = await (await fetch(`http://127.0.0.1:${s.adminPort}/metrics`)).text();
      expect(metrics).toMatch(
        /^portcullis_sidecar_requests_total\{route="slow",outcome="upstream_error"\} 1$/m,
      );
    } finally {
      await s.program.stop();
    }
  });

  it('the limiter store down and onStoreError deny: 503 problem+json with Retry-After', async () => {
    const s = await startSidecar(
      {
        upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
        route: { id: 'deny', path: '/**' },
        limiter: { replenishRate: 1, burstCapacity: 10, onStoreError: 'deny' },
        redis: { url: `redis://127.0.0.1:${await freePort()}`, connectTimeoutMs: 200 },
      },
      { name: 'sidecar-deny' },
    );
    try {
      const before = upstreamConnections.accepted;
      const res = await rawRequest(s.port, upgradeRequest('/chat', 'USER-ID: max\r\n'));
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(JSON.parse(res.body)).toMatchObject({
        type: 'urn:portcullis:problem:limiter-unavailable',
        status: 503,
      });
      expect(upstreamConnections.accepted).toBe(before);
    } finally {
      await s.program.stop();
    }
  });

  it('jwt key with rules: no token is 401 with a Bearer challenge; a verified one is tunnelled with its sub as USER-ID; a shadow rule never refuses', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwks = {
      keys: [{ ...(await exportJWK(publicKey)), kid: 'k', alg: 'ES256', use: 'sig' }],
    };
    const keyServer = http.createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks)),
    );
    await new Promise<void>((r) => keyServer.listen(0, '127.0.0.1', r));
    const jwksUrl = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}/jwks.json`;
    const s = await startSidecar(
      {
        upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
        route: { id: 'wsjwt', path: '/**' },
        limiter: {
          key: 'jwt',
          jwt: { issuer: 'http://issuer.test', audience: 'urn:ws', jwksUrl },
          rules: [
            {
              name: 'feed',
              path: '/feed',
              enforce: false,
              limits: [{ replenishRate: 1, burstCapacity: 1 }],
            },
            { name: 'chat', path: '/chat', limits: [{ replenishRate: 1, burstCapacity: 10 }] },
          ],
        },
      },
      { name: 'sidecar-ws-jwt' },
    );
    try {
      const before = upstreamConnections.accepted;
      const anonymous = await rawRequest(s.port, upgradeRequest('/chat', 'USER-ID: mallory\r\n'));
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      expect(upstreamConnections.accepted).toBe(before);
      const token = await new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: 'k', typ: 'at+jwt' })
        .setIssuer('http://issuer.test')
        .setAudience('urn:ws')
        .setSubject('grace')
        .setExpirationTime('5m')
        .sign(privateKey);
      const open = (path: string) =>
        new Promise<{ ws: WebSocket; res: http.IncomingMessage }>((resolve, reject) => {
          const ws = new WebSocket(`ws://127.0.0.1:${s.port}${path}`, {
            headers: { authorization: `Bearer ${token}`, 'USER-ID': 'mallory' },
          });
          clients.push(ws);
          ws.once('upgrade', (res) => ws.once('open', () => resolve({ ws, res })));
          ws.once('unexpected-response', (_req, res) =>
            reject(new Error(`unexpected ${res.statusCode}`)),
          );
          ws.once('error', reject);
        });
      const { ws, res } = await open('/chat');
      expect(res.headers['ratelimit-policy']).toBe('"rule2";q=10;w=10');
      expect(upgradeHeaders.at(-1)?.['user-id']).toBe('grace');
      ws.close();
      await closed(ws);
      // The feed rule holds one token and never refuses: both upgrades open, the second one over its limit.
      for (let i = 0; i < 2; i++) {
        const feed = await open('/feed');
        expect(feed.res.headers['ratelimit']).toBe('"rule1";r=0;t=1');
        feed.ws.close();
        await closed(feed.ws);
      }
    } finally {
      await s.program.stop();
      await new Promise((r) => keyServer.close(r));
    }
    await noSocketsLeft();
  });

  it('a path outside the route gets 404 problem+json', async () => {
    const s = await startSidecar(
      {
        upstream: { url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` },
        route: { id: 'api', path: '/api/**' },
        limiter: { replenishRate: 1, burstCapacity: 10 },
      },
      { name: 'sidecar-api' },
    );
    try {
      const res = await rawRequest(s.port, upgradeRequest('/chat', 'USER-ID: frank\r\n'));
      expect(res.status).toBe(404);
      expect(JSON.parse(res.body)).toMatchObject({ type: 'urn:portcullis:problem:no-route' });
    } finally {
      await s.program.stop();
    }
  });

  it('closing either side closes the other, abruptly or cleanly, and leaves no socket behind', async () => {
    // Client closes cleanly: the upstream sees the close.
    const one = await connect('gina');
    const upstreamSide = [...wss.clients][0];
    expect(upstreamSide).toBeInstanceOf(WebSocket);
    const upstreamClosed = new Promise<void>((r) => upstreamSide?.once('close', () => r()));
    one.ws.close(1000, 'bye');
    await upstreamClosed;
    await closed(one.ws);
    await noSocketsLeft();

    // Upstream drops the connection: the client is closed.
    const two = await connect('hank');
    expect(wss.clients.size).toBe(1);
    [...wss.clients][0]?.terminate();
    expect(await closed(two.ws)).toBe(1006);
    await noSocketsLeft();

    // Client vanishes (socket destroyed, no close frame): the upstream side closes.
    const three = await connect('ivy');
    const upstreamThree = [...wss.clients][0];
    const threeClosed = new Promise<void>((r) => upstreamThree?.once('close', () => r()));
    three.ws.terminate();
    await threeClosed;
    await noSocketsLeft();
  });
});

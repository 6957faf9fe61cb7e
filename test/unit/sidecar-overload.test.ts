// The sidecar's overload guard: the bounds it sheds at, the event-loop lag it samples only while
// decisions are awaited, and a connection it stops reading while a second request of it waits.
import net from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { LAG_SAMPLE_MS, OverloadGuard } from '../../sidecar/overload.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A socket without a stream handle (counting only). */
const bare = () => new net.Socket();

describe('OverloadGuard', () => {
  it('sheds once the decisions awaited reach maxPendingTakes, and not with 0 (no bound)', () => {
    const guard = new OverloadGuard();
    const socket = bare();
    for (let i = 0; i < 3; i++) guard.started(socket);
    expect(guard.shed({ maxPendingTakes: 4, maxEventLoopLagMs: 0 })).toBeUndefined();
    guard.started(socket);
    expect(guard.shed({ maxPendingTakes: 4, maxEventLoopLagMs: 0 })).toBe('pending_takes');
    expect(guard.shed({ maxPendingTakes: 0, maxEventLoopLagMs: 0 })).toBeUndefined();
    for (let i = 0; i < 4; i++) guard.settled(socket);
    expect(guard.pendingTakes).toBe(0);
    expect(guard.shed({ maxPendingTakes: 4, maxEventLoopLagMs: 0 })).toBeUndefined();
    guard.close();
  });

  it('measures a blocked event loop while a decision is awaited, and forgets it once idle', async () => {
    const guard = new OverloadGuard();
    const socket = bare();
    guard.started(socket);
    const until = performance.now() + 300;
    while (performance.now() < until) {
      // The loop is blocked: the sampling timer cannot fire.
    }
    await sleep(LAG_SAMPLE_MS / 2);
    expect(guard.lagMs).toBeGreaterThan(150);
    expect(guard.shed({ maxPendingTakes: 0, maxEventLoopLagMs: 150 })).toBe('event_loop_lag');
    guard.settled(socket);
    await sleep(LAG_SAMPLE_MS * 3);
    expect(guard.lagMs).toBe(0);
    expect(guard.shed({ maxPendingTakes: 0, maxEventLoopLagMs: 150 })).toBeUndefined();
    guard.close();
  });

  it('stops reading a connection while two of its requests await decisions, and reads on once both are decided', async () => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as net.AddressInfo;
    const client = net.connect(port, '127.0.0.1');
    const [accepted] = (await once(server, 'connection')) as [net.Socket];
    const received: string[] = [];
    accepted.on('data', (d: Buffer) => received.push(d.toString()));
    const guard = new OverloadGuard();
    try {
      guard.started(accepted);
      client.write('first');
      await sleep(100);
      expect(received.join('')).toBe('first');
      guard.started(accepted);
      client.write('second');
      await sleep(200);
      expect(received.join('')).toBe('first');
      guard.settled(accepted);
      await sleep(100);
      expect(received.join('')).toBe('first');
      guard.settled(accepted);
      await sleep(200);
      expect(received.join('')).toBe('firstsecond');
    } finally {
      guard.close();
      client.destroy();
      accepted.destroy();
      server.close();
    }
  });
});

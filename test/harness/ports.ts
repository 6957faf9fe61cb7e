import net from 'node:net';

/** Ports this process has handed out: the OS may pick a closed one again for the next bind(0). */
const handedOut = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it), never one this process
 * handed out before: two calls in a row (a program's port and its admin port) could otherwise get
 * the same number, and the program then fails with EADDRINUSE on its own second listener.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await osPicksPort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no unused free port after 50 attempts');
}

function osPicksPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error('no port assigned'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Resolves once something accepts TCP connections on host:port, or rejects after timeoutMs. */
export async function waitForPort(
  port: number,
  timeoutMs = 15_000,
  host = '127.0.0.1',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// RFC 9457 problem details, written straight to a node:http response, or to a raw socket when the
// request left the HTTP parser (an upgrade, or a request the parser refused).
import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export interface Problem {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  /** A stable identifier of the problem kind (URN), e.g. urn:portcullis:problem:rate-limited. */
  readonly type: string;
  readonly [extension: string]: unknown;
}

export const problemTypes = {
  rateLimited: 'urn:portcullis:problem:rate-limited',
  badKey: 'urn:portcullis:problem:invalid-user-id',
  invalidToken: 'urn:portcullis:problem:invalid-token',
  keyUnavailable: 'urn:portcullis:problem:token-keys-unavailable',
  notFound: 'urn:portcullis:problem:no-route',
  badRequest: 'urn:portcullis:problem:bad-request',
  storeUnavailable: 'urn:portcullis:problem:limiter-unavailable',
  overloaded: 'urn:portcullis:problem:overloaded',
  upstreamUnavailable: 'urn:portcullis:problem:upstream-unavailable',
  upstreamTimeout: 'urn:portcullis:problem:upstream-timeout',
  loopDetected: 'urn:portcullis:problem:loop-detected',
} as const;

/** Writes the problem; `headers` is a flat [name, value, ...] list of extra headers. */
export function sendProblem(res: ServerResponse, problem: Problem, headers: string[] = []): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(problem);
  headers.push(
    'content-type',
    'application/problem+json',
    'content-length',
    String(Buffer.byteLength(body)),
    'cache-control',
    'no-store',
  );
  res.writeHead(problem.status, headers);
  res.end(body);
}

/** How long a refused socket's further input is read and dropped before it is destroyed, ms. */
const LINGER_MS = 2000;

/**
 * Sockets that got their answer and are being drained before the close. Node's parser keeps
 * consuming a refused socket and reports the same error again with the next chunk; answering that
 * by destroying the socket would reset it with input unread, and the client lose the first answer.
 */
const lingering = new WeakSet<Duplex>();

/**
 * Writes a complete HTTP/1.1 response to a socket that left the HTTP parser, then closes it.
 * Closing a socket with request bytes still unread makes the kernel send a reset, and a client
 * still sending (a 1 MB header) may then lose the answer: the socket keeps reading and dropping
 * its input until the client closes, or LINGER_MS at most (a lingering close).
 */
export function writeSocketProblem(
  socket: Duplex,
  problem: Problem,
  headers: readonly string[] = [],
): void {
  if (lingering.has(socket)) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(problem);
  let head = `HTTP/1.1 ${problem.status} ${problem.title}\r\n`;
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`;
  head += `content-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n`;
  lingering.add(socket);
  socket.end(head + body);
  socket.on('data', () => {});
  socket.resume();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}

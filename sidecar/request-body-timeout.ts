// Idle timeout on request bodies (listen.requestTimeoutMs): a client that declares a body
// (Content-Length or chunked) and then stops sending it would otherwise hold its connection, an
// upstream connection and a limiter slot forever (the server runs with requestTimeout: 0 so that
// long streaming uploads are not cut). This watches the bytes read from the client socket instead:
// the timer fires only after `idleMs` without a single byte, never merely because an upload is
// long. With a rate floor (`minBytesPerSecond`), a window of `idleMs` must also bring that many
// bytes a second on average, so a body sending a byte now and then cannot hold its upstream
// connection either. A pause caused by our side (the upstream not reading, so the body sits buffered) does not
// count. On a timeout the client gets 408 problem+json when no response has started yet;
// otherwise (a response is already on the wire, e.g. a 429 answered before the body) the
// connection is closed.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { problemTypes, sendProblem } from './problem.ts';

/** True when the request announces a body (a non-zero Content-Length or any Transfer-Encoding). */
function announcesBody(raw: readonly string[]): boolean {
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 14 && name.toLowerCase() === 'content-length') {
      if (raw[i + 1] !== '0') return true;
    } else if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') return true;
  }
  return false;
}

export interface RequestBodyTimeoutOptions {
  /** Longest pause between two chunks of a request body, ms; 0 disables (read on every request). */
  readonly idleMs: () => number;
  /** Least average body rate over each idleMs window, bytes/s; 0: any progress will do. */
  readonly minBytesPerSecond?: () => number;
  /** Called once per timed-out request (metrics, a log line). */
  readonly onTimeout?: (responded: boolean) => void;
}

/** A 'request' listener for the proxy's node:http server. */
export function requestBodyTimeout(
  options: RequestBodyTimeoutOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const idleMs = options.idleMs();
    if (idleMs <= 0 || !announcesBody(req.rawHeaders)) return;
    const socket = req.socket;
    // Bytes each window must bring: at least one (the idle timeout), more with a rate floor.
    const needed = Math.max(1, Math.ceil(((options.minBytesPerSecond?.() ?? 0) * idleMs) / 1000));
    let lastBytes = socket.bytesRead;
    let timer: NodeJS.Timeout | undefined;
    const check = (): void => {
      timer = undefined;
      if (req.complete || socket.destroyed) return;
      // Enough progress since the last check, or body bytes waiting for us to read them: not the client's stall.
      if (socket.bytesRead - lastBytes >= needed || req.readableLength > 0) {
        lastBytes = socket.bytesRead;
        timer = setTimeout(check, idleMs);
        return;
      }
      const responded = res.headersSent;
      options.onTimeout?.(!responded);
      if (responded) {
        socket.destroy();
        return;
      }
      res.shouldKeepAlive = false;
      sendProblem(
        res,
        {
          type: problemTypes.badRequest,
          title: 'Request Timeout',
          status: 408,
          detail:
            needed > 1
              ? `The request body stalled: fewer than ${needed} bytes in ${idleMs} ms.`
              : `The request body stalled: no data for ${idleMs} ms.`,
        },
        ['connection', 'close'],
      );
      // The unread body would keep the socket waiting; close it once the 408 is written.
      res.once('finish', () => socket.destroySoon());
    };
    timer = setTimeout(check, idleMs);
    // Not on res 'close': a response may finish before the body (a 400 or 429), and the unread
    // rest would then hold the connection until keepAliveTimeout. req 'close' follows the body.
    req.once('close', () => {
      if (timer !== undefined) clearTimeout(timer);
    });
  };
}

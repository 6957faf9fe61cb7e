// Raw HTTP/1.1 over node:net for hostile-input tests: exact bytes out (non-UTF-8, control
// characters, malformed request lines), the status and timing back, and whether the server
// closed the connection. Also RSS sampling of a child process from /proc.
import { readFileSync } from 'node:fs';
import net from 'node:net';

export interface RawExchange {
  /** Status of the first response, undefined when the server closed without answering. */
  readonly status: number | undefined;
  /** Every status line received (a keep-alive connection may answer several pipelined requests). */
  readonly statuses: number[];
  /** True when the server closed (or reset) the connection. */
  readonly closed: boolean;
  /** The socket error that ended the exchange (ECONNRESET, EPIPE), undefined after a clean close. */
  readonly error: string | undefined;
  /** True when nothing at all happened within timeoutMs (a hang: always a failure). */
  readonly hung: boolean;
  /** ms from the first byte sent to the close (or the first status when not closed). */
  readonly ms: number;
  readonly head: string;
}

export interface RawOptions {
  /** Give up (and report a hang) after this many ms. */
  readonly timeoutMs?: number;
  /** Resolve as soon as a status line arrives instead of waiting for the close. */
  readonly untilStatus?: boolean;
  /** Write the bytes in pieces of this size with `delayMs` between them (slow client). */
  readonly chunkSize?: number;
  readonly delayMs?: number;
  /** Keep trickling this many extra bytes after `data` (never completing the headers). */
  readonly trickle?: Buffer;
}

export function rawExchange(
  port: number,
  data: Buffer | string,
  options: RawOptions = {},
): Promise<RawExchange> {
  const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data;
  const timeoutMs = options.timeoutMs ?? 5000;
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let done = false;
    let writer: NodeJS.Timeout | undefined;
    const start = performance.now();
    const finish = (closed: boolean, hung: boolean, error?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(writer);
      const text = Buffer.concat(chunks).toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
      // Interim 1xx answers (100 Continue) are not the response.
      resolve({
        status: statuses.find((x) => x >= 200),
        statuses,
        closed,
        error,
        hung,
        ms: performance.now() - start,
        head: text.slice(0, Math.max(0, text.indexOf('\r\n\r\n'))),
      });
      socket.destroy();
    };
    socket.on('data', (c: Buffer) => {
      chunks.push(c);
      if (
        options.untilStatus === true &&
        /HTTP\/1\.[01] \d{3}/.test(Buffer.concat(chunks).toString('latin1'))
      )
        finish(false, false);
    });
    socket.on('error', (err: NodeJS.ErrnoException) =>
      finish(true, false, err.code ?? err.message),
    );
    socket.on('close', () => finish(true, false));
    const timer = setTimeout(() => finish(false, true), timeoutMs);
    socket.once('connect', () => {
      const size = options.chunkSize;
      if (size === undefined) {
        socket.write(bytes);
        return;
      }
      const all = options.trickle === undefined ? bytes : Buffer.concat([bytes, options.trickle]);
      let offset = 0;
      writer = setInterval(() => {
        if (offset >= all.length || socket.destroyed) {
          clearInterval(writer);
          return;
        }
        socket.write(all.subarray(offset, offset + size));
        offset += size;
      }, options.delayMs ?? 50);
    });
  });
}

type StatusField = 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile';

/**
 * Memory fields of /proc/PID/status in KiB, from ONE read of the file: figures taken from separate
 * reads of a live process need not add up (VmRSS = RssAnon + RssFile + RssShmem only within one
 * read). Throws when the process is gone.
 */
export function statusFieldsKiB<F extends StatusField>(
  pid: number,
  fields: readonly F[],
): Record<F, number> {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const out = {} as Record<F, number>;
  for (const field of fields) {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(status);
    if (m === null) throw new Error(`no ${field} for pid ${pid}`);
    out[field] = Number(m[1]);
  }
  return out;
}

/** A memory field of /proc/PID/status, KiB; throws when the process is gone. */
export function statusKiB(pid: number, field: StatusField): number {
  return statusFieldsKiB(pid, [field])[field];
}

/** Resident set size of a process, in bytes (Linux /proc). */
export function rssBytes(pid: number): number {
  return statusKiB(pid, 'VmRSS') * 1024;
}

/** Peak resident set size of a process so far (VmHWM), in bytes. */
export function peakRssBytes(pid: number): number {
  return statusKiB(pid, 'VmHWM') * 1024;
}

export const MiB = 1024 * 1024;

// Helpers of the sidecar's integration tests (the sidecar itself starts from test/harness):
// raw HTTP when a test needs exact bytes, and a plain sleep.
import net from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly head: string;
  readonly headers: Map<string, string>;
  readonly body: string;
}

/** Sends exact request bytes (duplicate or odd headers) and reads the whole response. */
export function rawRequest(port: number, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = text.slice(0, split);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = new Map<string, string>();
      for (const line of lines) {
        const i = line.indexOf(':');
        headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
      }
      let body = text.slice(split + 4);
      if (headers.get('transfer-encoding') === 'chunked') body = dechunk(body);
      resolve({ status: Number(statusLine.split(' ')[1]), head, headers, body });
    });
    socket.write(
      request.includes('\r\nConnection:')
        ? request
        : request.replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n'),
    );
  });
}

function dechunk(text: string): string {
  let out = '';
  let at = 0;
  for (;;) {
    const eol = text.indexOf('\r\n', at);
    if (eol < 0) return out;
    const size = parseInt(text.slice(at, eol), 16);
    if (!(size > 0)) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Shared set-up for the sidecar's integration tests: real sidecar and user-service processes on
// free loopback ports, config files in a temp folder, raw HTTP when a test needs exact bytes.
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { freePort } from '../harness/ports.ts';
import { startProgram, type Program } from '../harness/programs.ts';

export interface RunningSidecar {
  readonly program: Program;
  readonly port: number;
  readonly adminPort: number;
  readonly url: string;
  readonly configFile: string;
  readonly config: SidecarConfigInput;
  /** Rewrites the config file (for hot-reload tests). */
  write(config: unknown): void;
}

export type SidecarOptions = Omit<SidecarConfigInput, 'listen' | 'admin'> & { name?: string };

export async function startSidecar(options: SidecarOptions): Promise<RunningSidecar> {
  const { name, ...rest } = options;
  const port = await freePort();
  const adminPort = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-sidecar-'));
  const configFile = path.join(dir, 'sidecar.yaml');
  const config: SidecarConfigInput = {
    listen: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort },
    ...rest,
  };
  writeFileSync(configFile, stringify(config));
  const program = await startProgram({ entry: 'sidecar/main.ts', args: ['--config', configFile], waitPort: port, name: name ?? 'sidecar' });
  return {
    program,
    port,
    adminPort,
    url: `http://127.0.0.1:${port}`,
    configFile,
    config,
    write(next) {
      writeFileSync(configFile, typeof next === 'string' ? next : stringify(next));
    },
  };
}

export async function startUserService(): Promise<{ program: Program; port: number; url: string }> {
  const port = await freePort();
  const program = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    waitPort: port,
    name: 'user-service',
  });
  return { program, port, url: `http://127.0.0.1:${port}` };
}

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
    socket.write(request.includes('\r\nConnection:') ? request : request.replace(/\r\n\r\n$/, '\r\nConnection: close\r\n\r\n'));
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

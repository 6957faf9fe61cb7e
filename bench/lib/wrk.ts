// Runs Debian's wrk (a C load generator, so it does not compete for a Node core) against a URL and
// returns its summary. Installed on demand by scripts/ensure-system-deps.sh.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export interface WrkResult {
  readonly requests: number;
  readonly durationUs: number;
  readonly bytes: number;
  readonly errors: {
    connect: number;
    read: number;
    write: number;
    status: number;
    timeout: number;
  };
  readonly latencyUs: {
    mean: number;
    stdev: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    p999: number;
  };
}

export interface WrkOptions {
  readonly url: string;
  readonly connections: number;
  readonly threads: number;
  readonly durationS: number;
  readonly headers?: Readonly<Record<string, string>>;
  /** A file of 'Name: value' lines: request i sends line i mod n as well (wrk.lua). */
  readonly rotateHeaderFile?: string;
}

/** Every failed request of a run: connect, read, write and timeout errors and non-2xx answers. */
export function wrkErrors(w: WrkResult): number {
  return w.errors.connect + w.errors.read + w.errors.write + w.errors.status + w.errors.timeout;
}

export function ensureWrk(): void {
  execFileSync(path.join(here, '..', '..', 'scripts', 'ensure-system-deps.sh'), ['wrk:wrk'], {
    stdio: 'inherit',
  });
}

export function runWrk(options: WrkOptions): Promise<WrkResult> {
  const args = [
    '-t',
    String(options.threads),
    '-c',
    String(options.connections),
    '-d',
    `${options.durationS}s`,
    '--timeout',
    '5s',
    '-s',
    path.join(here, 'wrk.lua'),
  ];
  for (const [name, value] of Object.entries(options.headers ?? {}))
    args.push('-H', `${name}: ${value}`);
  args.push(options.url);
  return new Promise((resolve, reject) => {
    const env =
      options.rotateHeaderFile === undefined
        ? process.env
        : { ...process.env, WRK_ROTATE_FILE: options.rotateHeaderFile };
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'], env });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('WRK_JSON '));
      if (code !== 0 || line === undefined) {
        reject(new Error(`wrk exited with ${code}:\n${out}`));
        return;
      }
      resolve(JSON.parse(line.slice('WRK_JSON '.length)) as WrkResult);
    });
  });
}

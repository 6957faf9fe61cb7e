// Builds (once, cached outside the repo, keyed by the source's hash) and runs bench/loadgen, the
// constant-rate load generator written in Go (standard library only; Debian has no wrk2).
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const source = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'loadgen');

export interface LoadgenResult {
  readonly mode: 'rate' | 'list';
  readonly sent: number;
  readonly completed: number;
  readonly errors: number;
  /** Requests never sent because the time limit passed (the target stalled). */
  readonly dropped: number;
  readonly statuses: Record<string, number>;
  readonly elapsedUs: number;
  readonly offeredRate?: number;
  readonly achievedRate: number;
  /** From the intended send time (rate mode) or the send (list mode), µs. */
  readonly latencyUs: {
    p50: number;
    p90: number;
    p99: number;
    p999: number;
    max: number;
    mean: number;
  };
  readonly firstError?: string;
  readonly sampleNon2xxBody?: string;
}

let binary: string | undefined;

/** Path of the built binary; builds it on first use (needs the Go toolchain, no network). */
export function ensureLoadgen(): string {
  if (binary !== undefined) return binary;
  const hash = createHash('sha256');
  for (const f of ['go.mod', 'main.go']) hash.update(readFileSync(path.join(source, f)));
  const dir = path.join(
    process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'),
    'portcullis',
    `loadgen-${hash.digest('hex').slice(0, 16)}`,
  );
  const out = path.join(dir, 'loadgen');
  if (!existsSync(out)) {
    // Debian's golang-go when no Go toolchain is on PATH (the Go machines have one already).
    execFileSync(
      path.join(source, '..', '..', 'scripts', 'ensure-system-deps.sh'),
      ['go:golang-go'],
      { stdio: 'inherit' },
    );
    mkdirSync(dir, { recursive: true });
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: source,
      stdio: 'inherit',
      env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
    });
  }
  binary = out;
  return out;
}

function run(args: string[]): Promise<LoadgenResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(ensureLoadgen(), args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{'))
        reject(new Error(`loadgen exited with ${code}: ${out}`));
      else resolve(JSON.parse(line) as LoadgenResult);
    });
  });
}

/**
 * Open-model load: `rate` requests/s for `durationS`, latency from the intended send time.
 * rotateHeaderFile: a file of 'Name: value' lines; request i sends line i mod n as well.
 */
export function runRate(o: {
  url: string;
  rate: number;
  durationS: number;
  connections: number;
  headers?: Record<string, string>;
  rotateHeaderFile?: string;
  /** Writes one 'intended-send-Unix-µs latency-µs' line per completed request there. */
  timelineFile?: string;
}): Promise<LoadgenResult> {
  const u = new URL(o.url);
  const args = [
    'rate',
    '-addr',
    u.host,
    '-path',
    `${u.pathname}${u.search}`,
    '-rate',
    String(o.rate),
    '-duration',
    `${o.durationS}s`,
    '-connections',
    String(o.connections),
  ];
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
  if (o.rotateHeaderFile !== undefined) args.push('-rotate', o.rotateHeaderFile);
  if (o.timelineFile !== undefined) args.push('-timeline', o.timelineFile);
  return run(args);
}

/** Sends every request of a JSON-lines file once over `connections` keep-alive connections. */
export function runList(o: {
  baseUrl: string;
  file: string;
  connections: number;
}): Promise<LoadgenResult> {
  return run([
    'list',
    '-addr',
    new URL(o.baseUrl).host,
    '-file',
    o.file,
    '-connections',
    String(o.connections),
  ]);
}

// The two load generators, neither competing for a Node core: Debian's wrk (C, closed model: the
// most a front serves; installed on demand by scripts/ensure-system-deps.sh) and bench/loadgen
// (Go, standard library only, open model like wrk2, which Debian lacks: latency from the intended
// send time), built once, cached outside the repo and keyed by the source's hash.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from '../../test/harness/programs.ts';
import { ensureSystemDeps } from './suite.ts';

type Latency = Record<'p50' | 'p99' | 'p999' | 'max', number>;

/** wrk's summary (bench/lib/wrk.lua), as far as it is read here; latencies in µs. */
export interface WrkResult {
  readonly requests: number;
  readonly durationUs: number;
  readonly errors: Record<'connect' | 'read' | 'write' | 'status' | 'timeout', number>;
  readonly latencyUs: Latency;
}

/** bench/loadgen's summary, as far as it is read here. */
export interface LoadgenResult {
  readonly completed: number;
  readonly errors: number;
  /** Requests never sent because the time limit passed (the target stalled). */
  readonly dropped: number;
  readonly statuses: Record<string, number>;
  readonly elapsedUs: number;
  readonly achievedRate: number;
  /** From the intended send time (rate mode) or the send (list mode), µs. */
  readonly latencyUs: Latency;
  readonly firstError?: string;
  readonly sampleNon2xxBody?: string;
}

/** Runs `command` and parses the JSON of the last stdout line matching `line` (its group 1). */
function jsonOutput<T>(command: string, args: string[], line: RegExp, env?: NodeJS.ProcessEnv) {
  return new Promise<T>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'], env });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => {
      const json = [...out.matchAll(line)].pop()?.[1];
      if (code !== 0 || json === undefined)
        reject(new Error(`${path.basename(command)} exited with ${code}:\n${out}`));
      else resolve(JSON.parse(json) as T);
    });
  });
}

/** `-name value` for each flag that has a value, and `-H 'Name: value'` for each header. */
const flags = (f: Record<string, string | number | undefined>, headers = {}) => [
  ...Object.entries(f).flatMap(([k, v]) => (v === undefined ? [] : [`-${k}`, String(v)])),
  ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${String(v)}`]),
];

export const ensureWrk = () => ensureSystemDeps('wrk:wrk');

/** Requests answered per second over the run. */
export const wrkRps = (w: WrkResult): number => Math.round(w.requests / (w.durationUs / 1e6));

/** bench/loadgen's requests not answered 200: errors, non-200 answers and requests never sent. */
export const lgFailures = (l: LoadgenResult): number =>
  l.errors + l.dropped + l.completed - (l.statuses['200'] ?? 0);

/** Every failed request of a run: connect, read, write and timeout errors and non-2xx answers. */
export const wrkErrors = (w: WrkResult): number =>
  Object.values(w.errors).reduce((a, b) => a + b, 0);

/** A load on `url` for `durationS` over `connections`, sending `headers`; rotateHeaderFile: a file of 'Name: value' lines, request i sends line i mod n as well. */
interface Load {
  readonly url: string;
  readonly durationS: number;
  readonly connections: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly rotateHeaderFile?: string;
}

/** wrk, one thread (wrk.lua rotates the header lines). */
export function runWrk(o: Load): Promise<WrkResult> {
  const args = flags({ t: 1, c: o.connections, d: `${o.durationS}s` }, o.headers);
  args.push('--timeout', '5s', '-s', path.join(repoRoot, 'bench', 'lib', 'wrk.lua'), o.url);
  const env = { ...process.env, WRK_ROTATE_FILE: o.rotateHeaderFile ?? '' };
  return jsonOutput('wrk', args, /^WRK_JSON (.*)$/gm, env);
}

/** Path of the built bench/loadgen; builds it on first use (needs the Go toolchain, no network). */
export function ensureLoadgen(): string {
  const source = path.join(repoRoot, 'bench', 'loadgen');
  const hash = createHash('sha256');
  for (const f of ['go.mod', 'main.go']) hash.update(readFileSync(path.join(source, f)));
  const cache = process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache');
  const dir = path.join(cache, 'portcullis', `loadgen-${hash.digest('hex').slice(0, 16)}`);
  const out = path.join(dir, 'loadgen');
  if (!existsSync(out)) {
    // Debian's golang-go when no Go toolchain is on PATH (the Go machines have one already).
    ensureSystemDeps('go:golang-go');
    mkdirSync(dir, { recursive: true });
    execFileSync('go', ['build', '-o', out, '.'], {
      cwd: source,
      stdio: 'inherit',
      env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
    });
  }
  return out;
}

const loadgen = (args: string[]) => jsonOutput<LoadgenResult>(ensureLoadgen(), args, /^(\{.*)$/gm);

/** Open-model load: `rate` requests/s, latency from the intended send time. */
export function runRate(o: Load & { rate: number }): Promise<LoadgenResult> {
  const u = new URL(o.url);
  const f = {
    addr: u.host,
    path: `${u.pathname}${u.search}`,
    rate: o.rate,
    duration: `${o.durationS}s`,
    connections: o.connections,
    rotate: o.rotateHeaderFile,
  };
  return loadgen(['rate', ...flags(f, o.headers)]);
}

/** Sends every request of a JSON-lines file once over `connections` keep-alive connections. */
export function runList(o: { baseUrl: string; file: string; connections: number }) {
  const f = { addr: new URL(o.baseUrl).host, file: o.file, connections: o.connections };
  return loadgen(['list', ...flags(f)]);
}

// Instructions per proxied request, for a fair and repeatable comparison. Requests/s and CPU
// time on this shared 2-core machine move by 30 % from round to round with whatever else runs; the
// number of instructions a front executes per request moves far less (the memory-store sidecar, the
// Node peer and nginx repeated within 0.5 % between two runs; the bare proxy, on V8's defaults,
// 14 %; but one count was 35 % high while a Go build kept both cores busy: V8's heuristics go by
// time as well as by work, so counts are compared within one quiet run). Each front runs alone under valgrind's callgrind, behind the same upstream and with the same
// request and limits as the gateway suite; wrk (50 connections) drives it until it has answered a
// number of requests (V8 tiers code up by how often it runs, not by time: a Node proxy here needs
// ~20,000-50,000 requests before its count per request settles, from ~1.5 M in the first 500), then
// callgrind's counters are zeroed, wrk runs for the measured window, and the counters are dumped.
// Reported: user-space instructions (every thread of the front: the event loop, V8's compiler and
// GC helpers) divided by the requests wrk completed in the window.
// What the count leaves out: the kernel (system calls, loopback TCP), about a third of a Node proxy's
// CPU time here; the fronts make about the same system calls per request. Under callgrind a front
// runs ~50x slower, so it is the bottleneck and batches per event-loop turn as it does at
// saturation. Needs valgrind (installed on demand from Debian); without it the suite says so.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { BARE_PROXY_DESCRIPTION, nginxUnreachable, startBareProxy, startBenchSidecar, unreachable } from '../gateway.ts';
import { ensureWrk, runWrk, wrkErrors } from '../gateway-wrk.ts';
import { ensureNginx, startNginx } from '../peers/nginx.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Starting a front under callgrind takes 10-40 s here. */
const startMs = 180_000;

export interface InstructionsRun {
  readonly target: string;
  readonly description: string;
  readonly requests: number;
  readonly instructions: number;
  readonly instructionsPerRequest: number;
  /** Requests/s under callgrind (context only: the instrumented front is the bottleneck). */
  readonly requestsPerSecond: number;
  readonly errors: number;
}

export interface InstructionsBenchResult {
  readonly suite: 'instructions';
  readonly startedAt: string;
  /** Why nothing was measured. */
  readonly notRun?: string;
  readonly valgrind?: string;
  readonly warmupRequests?: number;
  readonly durationS?: number;
  readonly runs: InstructionsRun[];
  /** Other front's instructions per request / sidecar-redis's: how many times the sidecar's work each costs. */
  readonly ratios: Record<string, number>;
}

/** The total of a callgrind output file (`summary:` or `totals:` line), or undefined. */
export function callgrindTotal(text: string): number | undefined {
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  return m === null ? undefined : Number(m[1]);
}

/** valgrind installed from Debian when missing, and its version; undefined when it cannot be had. */
export function valgrindVersion(): string | undefined {
  try {
    execFileSync(path.join(repoRoot, 'scripts', 'ensure-system-deps.sh'), ['valgrind:valgrind'], { stdio: 'inherit' });
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

interface Front {
  readonly name: string;
  readonly description: string;
  /** Starts the front with the launcher before its binary; returns its base URL, pid and stop. */
  start(launcher: string[]): Promise<{ url: string; pid: number | undefined; stop: () => Promise<unknown> }>;
}

export async function runInstructionsBench(log: (line: string) => void = console.log): Promise<InstructionsBenchResult> {
  const startedAt = new Date().toISOString();
  const valgrind = valgrindVersion();
  if (valgrind === undefined) {
    const why = 'valgrind is not installed and could not be installed (scripts/ensure-system-deps.sh valgrind:valgrind)';
    log(`instructions: NOT RUN on this machine: ${why}`);
    return { suite: 'instructions', startedAt, notRun: why, runs: [], ratios: {} };
  }
  ensureWrk();
  ensureNginx();
  const warmupRequests = Number(process.env['BENCH_INSTRUCTIONS_WARMUP_REQUESTS'] ?? 50_000);
  const durationS = Number(process.env['BENCH_INSTRUCTIONS_DURATION_S'] ?? 60);
  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'bench-user-service' });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const sidecar = (name: string, redisUrl: string | undefined): Front['start'] => async (launcher) => {
    const s = await startBenchSidecar(userUrl, redisUrl, name, 'deployed', { launcher, waitPortMs: startMs });
    return { url: s.url, pid: s.program.child.pid, stop: () => s.program.stop() };
  };
  const program = (entry: string, name: string, env: Record<string, string>): Front['start'] => async (launcher) => {
    const port = await freePort();
    const p = await startProgram({ entry, env: { ...env, PORT: String(port) }, waitPort: port, waitPortMs: startMs, name, launcher });
    return { url: `http://127.0.0.1:${port}`, pid: p.child.pid, stop: () => p.stop() };
  };
  const fronts: Front[] = [
    { name: 'sidecar-redis', description: 'Portcullis sidecar as deployed, Redis token bucket', start: sidecar('bench-instr-sidecar-redis', redis.url) },
    { name: 'sidecar-memory', description: 'Portcullis sidecar as deployed, in-memory token bucket', start: sidecar('bench-instr-sidecar-memory', undefined) },
    { name: 'bare-proxy', description: BARE_PROXY_DESCRIPTION, start: (launcher) => startBareProxy(userUrl, 'bench-instr-bare-proxy', { launcher, waitPortMs: startMs }) },
    {
      name: 'node-peer',
      description: 'fastify + @fastify/http-proxy + @fastify/rate-limit (Redis store)',
      start: program('bench/peers/node-peer.ts', 'bench-instr-node-peer', { UPSTREAM_URL: userUrl, REDIS_URL: redis.url, MAX: String(unreachable.burstCapacity), WINDOW_MS: '1000' }),
    },
    {
      name: 'nginx',
      description: 'nginx (Debian), proxy_pass + limit_req, one process',
      start: async (launcher) => {
        const n = await startNginx({ upstreamPort: userPort, ...nginxUnreachable, launcher, waitPortMs: startMs });
        return { url: n.url, pid: n.workerPid(), stop: () => n.stop() };
      },
    },
  ];
  const only = (process.env['BENCH_TARGETS'] ?? '').split(',').filter(Boolean);
  const chosen = only.length > 0 ? fronts.filter((f) => only.includes(f.name)) : fronts;
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-callgrind-'));
  const runs: InstructionsRun[] = [];
  try {
    for (const front of chosen) {
      const launcher = ['valgrind', '--tool=callgrind', `--callgrind-out-file=${path.join(outDir, `${front.name}.%p`)}`];
      const f = await front.start(launcher);
      try {
        if (f.pid === undefined) throw new Error(`${front.name}: no pid`);
        const counted = await countInstructions({ name: front.name, pid: f.pid, url: `${f.url}/healthcheck/ready`, outDir, warmupRequests, durationS, log });
        const run: InstructionsRun = { target: front.name, description: front.description, ...counted };
        runs.push(run);
        log(`  ${front.name}: ${run.requests} requests, ${(run.instructions / 1e6).toFixed(0)} M instructions, ${run.instructionsPerRequest} per request (${run.requestsPerSecond} req/s under callgrind, ${run.errors} errors)`);
      } finally {
        await f.stop();
      }
    }
  } finally {
    await user.stop();
    await redis.stop();
    // BENCH_INSTRUCTIONS_KEEP=DIR keeps the dumps, for callgrind_annotate (where the instructions go).
    const keep = process.env['BENCH_INSTRUCTIONS_KEEP'];
    if (keep !== undefined && keep !== '') cpSync(outDir, keep, { recursive: true });
    rmSync(outDir, { recursive: true, force: true });
  }
  return { suite: 'instructions', startedAt, valgrind, warmupRequests, durationS, runs, ratios: instructionRatios(runs) };
}

export interface CountOptions {
  readonly name: string;
  /** The front's process, started under `valgrind --tool=callgrind --callgrind-out-file=<outDir>/<name>.%p`. */
  readonly pid: number;
  readonly url: string;
  readonly outDir: string;
  readonly warmupRequests: number;
  readonly durationS: number;
  readonly log: (line: string) => void;
}

/**
 * Warms a front up by request count, zeroes its callgrind counters, drives it with wrk (50
 * connections, a USER-ID) for durationS and reads the dump: instructions per request answered.
 */
export async function countInstructions(o: CountOptions): Promise<Omit<InstructionsRun, 'target' | 'description'>> {
  const headers = { 'USER-ID': 'bench-user' };
  let warmed = 0;
  while (warmed < o.warmupRequests) {
    const chunk = (await runWrk({ url: o.url, connections: 50, threads: 1, durationS: 20, headers })).requests;
    if (chunk === 0) throw new Error(`${o.name}: answered no request in 20 s under callgrind`);
    warmed += chunk;
  }
  o.log(`  ${o.name}: warmed up with ${warmed} requests`);
  execFileSync('callgrind_control', ['--zero', String(o.pid)], { stdio: 'ignore' });
  const wrk = await runWrk({ url: o.url, connections: 50, threads: 1, durationS: o.durationS, headers });
  execFileSync('callgrind_control', ['--dump', String(o.pid)], { stdio: 'ignore' });
  // The dump on request is <name>.<pid>.1 (the one at exit, without the suffix, comes later).
  const dump = path.join(o.outDir, `${o.name}.${o.pid}.1`);
  const total = existsSync(dump) ? callgrindTotal(readFileSync(dump, 'utf8')) : undefined;
  if (total === undefined) throw new Error(`${o.name}: callgrind wrote no dump with a total in ${o.outDir}`);
  if (wrk.requests === 0) throw new Error(`${o.name}: no request answered under callgrind`);
  return {
    requests: wrk.requests,
    instructions: total,
    instructionsPerRequest: Math.round(total / wrk.requests),
    requestsPerSecond: Math.round(wrk.requests / (wrk.durationUs / 1e6)),
    errors: wrkErrors(wrk),
  };
}

/** Each other front's instructions per request over sidecar-redis's (2 = it executes twice as many). */
export function instructionRatios(runs: readonly InstructionsRun[]): Record<string, number> {
  const base = runs.find((r) => r.target === 'sidecar-redis');
  const ratios: Record<string, number> = {};
  if (base === undefined || base.instructionsPerRequest === 0) return ratios;
  for (const r of runs) {
    if (r.target === base.target) continue;
    ratios[`${r.target}/sidecar-redis`] = Math.round((r.instructionsPerRequest / base.instructionsPerRequest) * 100) / 100;
  }
  return ratios;
}

export function instructionsMarkdown(result: InstructionsBenchResult): string {
  if (result.notRun !== undefined) return `Instructions per request, ${result.startedAt}: **not run on this machine**: ${result.notRun}.`;
  const ratio = (target: string) => {
    const x = target === 'sidecar-redis' ? 1 : result.ratios[`${target}/sidecar-redis`];
    return x === undefined ? '-' : `${x.toFixed(2)}x`;
  };
  return [
    `Instructions per request, ${result.startedAt}: each front alone under callgrind (${result.valgrind}), wrk with 50 connections, warmed up with ${result.warmupRequests} requests, ` +
      `counted over the next ${result.durationS} s; user-space instructions of every thread of the front (the kernel's share is not counted). ` +
      'It moves far less than requests/s with whatever else runs on the machine, but a heavy neighbour can still raise it (docs/performance.md says how much).',
    '',
    '| front | what | requests counted | instructions per request | / sidecar-redis | req/s under callgrind | errors |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...result.runs.map(
      (r) =>
        `| ${r.target} | ${r.description} | ${r.requests} | ${r.instructionsPerRequest.toLocaleString('en-US')} | ${ratio(r.target)} | ${r.requestsPerSecond} | ${r.errors} |`,
    ),
  ].join('\n');
}

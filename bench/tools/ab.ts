// A/B of two sidecar bundles, to record a change's before and after. The working tree's sidecar
// (B) against the sidecar of a git revision (A), each bundled by its own scripts/bundle.ts, run as
// deployed (SIDECAR_ENV, Redis store, a limit nobody reaches), behind one user service and one
// redis-server. Two measures:
//   wall clock  wrk at saturation (50 connections), A and B alternating in short rounds (the order
//               flips each round), CPU µs per request from /proc; the per-round ratio B/A of each,
//               median [lowest-highest], and each one's peak RSS. This host drifts within a
//               minute; adjacent runs agree.
//   callgrind   (--callgrind) each bundle alone under callgrind, warmed up by request count,
//               instructions per request (bench/lib/callgrind.ts): the CPU figure that repeats
//               on a shared VM.
//   allocation  (--alloc) each bundle alone at a fixed rate (--alloc-rate, 4,000 req/s) with V8's
//               sampling heap profiler on (through the inspector, keeping the samples of objects
//               already collected: everything allocated, garbage included) and --trace-gc:
//               bytes allocated per request, and scavenges and major GCs per 1,000 requests.
//               A sample stands for 1,024 bytes on average: totals move by a few per cent.
//   fixed rate  (--rate N) bench/loadgen (Go, open model) at N req/s, A and B alternating in the
//               same number of rounds: p50, p99 and p99.9 latency of each, median over the rounds,
//               the per-round B - A difference of p99 (for the p99 goal's "before and after"), and CPU
//               per request at that rate (B/A per round).
//   node bench/tools/ab.ts --base REV [--rounds 9] [--duration 5] [--rate N] [--callgrind [--callgrind-runs N]] [--alloc [--alloc-rate N]] [--store redis|memory] [--flood] [--env NAME=VALUE ...]
// --flood gives the one user a limit of 100 a second (burst 100) instead of one nobody reaches, so
// nearly every request is refused: what a user flooding past the limit costs. With the Redis store
// the tables also give redis-server's CPU per request (INFO cpu; A and B share the server and take
// turns).
// --store memory runs both with the in-memory bucket, which takes the Redis batching out of the
// count (how many takes share a script call depends on timing). It still moves between runs on a
// shared VM (docs/how-to/measure-performance.md): compare several --callgrind-runs.
// --rounds 0 skips the wall clock. Run it once with no change (A against A) to see this machine's
// noise before reading a difference.
// --hash-keys gives B the Redis settings the operator renders (redis.hashKeys: true, the bucket key
// an HMAC of route and user, and a namespace key prefix), against A's plain keys.
// --env (repeatable) sets B's environment only, over SIDECAR_ENV (to A/B a runtime setting on the
// same code: --base HEAD).
// Prints a Markdown table; writes nothing to bench/results (quote it in docs/reference/performance.md).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, copyFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { bundleSidecar, type bundleNodeProgram } from '../../scripts/bundle.ts';
import { connectInspector, type AllocationNode } from '../../test/harness/inspector.ts';
import { freePort } from '../../test/harness/ports.ts';
import { startSidecar, type Program, type RunningSidecar } from '../../test/harness/programs.ts';
import { statusKiB } from '../../test/harness/raw-http.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { Redis } from 'ioredis';
import { countInstructions } from '../lib/callgrind.ts';
import { startUpstream, unreachable, withNodeOptions } from '../lib/fronts.ts';
import { ensureLoadgen, runRate } from '../lib/loadgen.ts';
import { cpuUs, median, r2 } from '../lib/measure.ts';
import { redisCpuUs } from '../lib/redis-info.ts';
import { ensureWrk, runWrk } from '../lib/wrk.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    rounds: { type: 'string', default: '9' },
    duration: { type: 'string', default: '5' },
    callgrind: { type: 'boolean', default: false },
    'callgrind-runs': { type: 'string', default: '1' },
    alloc: { type: 'boolean', default: false },
    'alloc-rate': { type: 'string', default: '4000' },
    rate: { type: 'string' },
    env: { type: 'string', multiple: true, default: [] },
    store: { type: 'string', default: 'redis' },
    flood: { type: 'boolean', default: false },
    'hash-keys': { type: 'boolean', default: false },
  },
  strict: true,
});
if (values.base === undefined) throw new Error('--base REV is required (e.g. --base HEAD~1)');
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds >= 0)) throw new Error(`--rounds must be a whole number (0 skips the wall clock), got ${values.rounds}`);
if (values.store !== 'redis' && values.store !== 'memory') throw new Error(`--store must be redis or memory, got ${values.store}`);
const durationS = Number(values.duration);
const callgrindRuns = Number(values['callgrind-runs']);
if (!(Number.isInteger(callgrindRuns) && callgrindRuns >= 1)) throw new Error(`--callgrind-runs must be a whole number from 1, got ${values['callgrind-runs']}`);
const rate = values.rate === undefined ? undefined : Number(values.rate);
if (rate !== undefined && !(rate > 0)) throw new Error(`--rate must be a positive number of requests per second, got ${values.rate}`);
if (rounds === 0 && (rate !== undefined || !(values.callgrind || values.alloc))) throw new Error('--rounds 0 leaves only --callgrind and --alloc to measure (--rate runs in rounds too)');
const extraEnv = Object.fromEntries(values.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
const envB: Record<string, string> = { ...SIDECAR_ENV, ...extraEnv };

/**
 * Bundles the sidecar of `rev` with rev's own recipe (scripts/bundle.ts), from a git archive
 * beside the repository's node_modules, into dir.
 */
async function bundleRevision(rev: string, dir: string): Promise<string> {
  const src = path.join(dir, 'src');
  execFileSync('mkdir', ['-p', src]);
  // Older revisions kept the shared code (and the Lua script) under sidecar/; newer ones under lib/.
  const inRev = (p: string) => spawnSync('git', ['-C', repoRoot, 'cat-file', '-e', `${rev}:${p}`]).status === 0;
  const paths = ['sidecar', 'lib', 'scripts/bundle.ts'].filter(inRev);
  execFileSync('sh', ['-c', `git -C "${repoRoot}" archive "${rev}" ${paths.join(' ')} | tar -x -C "${src}"`]);
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(src, 'node_modules'));
  const out = path.join(dir, 'a', 'main.mjs');
  const recipe = (await import(path.join(src, 'scripts', 'bundle.ts'))) as { bundleNodeProgram: typeof bundleNodeProgram };
  await recipe.bundleNodeProgram(path.join(src, 'sidecar', 'main.ts'), out);
  const lua = ['lib/token-bucket/token-bucket.lua', 'sidecar/stores/token-bucket.lua'].find(inRev);
  if (lua === undefined) throw new Error(`${rev} has no token-bucket.lua where this tool looks for it`);
  copyFileSync(path.join(src, lua), path.join(dir, 'a', 'token-bucket.lua'));
  return out;
}

const spread = (xs: number[]) => `${r2(median(xs))} [${r2(Math.min(...xs))}-${r2(Math.max(...xs))}]`;

interface Latency {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  /** The sidecar's CPU per completed request at this rate, µs. */
  readonly cpu: number;
  /** redis-server's CPU per completed request, µs (0 with the memory store). */
  readonly redisCpu: number;
  readonly errors: number;
}

/**
 * `times` rounds of `measure` on A and on B, the order flipping each round (the host drifts
 * within a minute); answers each side's results in round order. `report` sees each round (from 1).
 */
async function alternate<S, T>(
  a: S,
  b: S,
  measure: (s: S) => Promise<T>,
  report: (round: number, ga: T, gb: T) => void,
  times = rounds,
): Promise<[T[], T[]]> {
  const out: [T[], T[]] = [[], []];
  for (let r = 0; r < times; r++) {
    const [first, second] = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of [first, second] as (0 | 1)[]) out[i].push(await measure(i === 0 ? a : b));
    report(r + 1, out[0][r] as T, out[1][r] as T);
  }
  return out;
}

/** f(A's, B's) of each round. */
const perRound = <T>([xa, xb]: [T[], T[]], f: (ga: T, gb: T) => number): number[] => xa.map((ga, r) => f(ga, xb[r] as T));

/** Bytes a V8 sampling heap profile allocated in all, garbage included. */
function allocatedBytes(head: AllocationNode): number {
  let total = 0;
  const pending: AllocationNode[] = [head];
  for (let n = pending.pop(); n !== undefined; n = pending.pop()) {
    total += n.selfSize;
    pending.push(...n.children);
  }
  return total;
}

/** GC lines (--trace-gc) a program has printed so far, by kind. */
function gcCounts(p: Program): { scavenges: number; majors: number } {
  return { scavenges: p.lines.filter((l) => / Scavenge /.test(l)).length, majors: p.lines.filter((l) => / Mark-Compact /.test(l)).length };
}

/** Bytes allocated per request and GCs per 1,000 requests of a sidecar started with --inspect and --trace-gc, at `perSecond`. */
async function allocation(s: RunningSidecar, perSecond: number): Promise<{ bytes: number; scavenges: number; majors: number }> {
  const url = `${s.url}/healthcheck/ready`;
  await runRate({ url, rate: perSecond, durationS: 5, connections: 50, headers });
  const inspector = await connectInspector(s.program);
  try {
    const before = gcCounts(s.program);
    const { result: lg, head } = await inspector.sampleAllocations(1024, () => runRate({ url, rate: perSecond, durationS: 10, connections: 50, headers }));
    const after = gcCounts(s.program);
    const n = Math.max(1, lg.completed);
    return { bytes: Math.round(allocatedBytes(head) / n), scavenges: r2(((after.scavenges - before.scavenges) * 1000) / n), majors: r2(((after.majors - before.majors) * 1000) / n) };
  } finally {
    inspector.close();
  }
}

const work = mkdtempSync(path.join(os.tmpdir(), 'portcullis-ab-'));
const entryA = await bundleRevision(values.base, work);
const entryB = path.join(work, 'b', 'main.mjs');
await bundleSidecar(repoRoot, path.dirname(entryB));
ensureWrk();
if (rate !== undefined || values.alloc) ensureLoadgen();

const redis = await startRedis();
const upstream = await startUpstream('ab-user-service');
const user = upstream.program;
const config = {
  upstream: { url: upstream.url },
  route: { id: 'bench', path: '/**' },
  limiter: values.flood ? { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 } : unreachable,
  ...(values.store === 'redis' ? { redis: { url: redis.url, commandTimeoutMs: 1000 } } : {}),
  logLevel: 'warn' as const,
};
/** B's config: with --hash-keys, the Redis settings the operator renders for a route in namespace `bench`. */
const configB = values['hash-keys'] && 'redis' in config ? { ...config, redis: { ...config.redis, keyPrefix: 'portcullis:bucket:bench:', hashKeys: true } } : config;
const headers = { 'USER-ID': 'bench-user' };
const withRedis = values.store === 'redis';
const admin = withRedis ? new Redis(redis.url) : undefined;
/** redis-server's CPU so far, µs (0 with the memory store). */
const redisCpuSoFar = async (): Promise<number> => (admin === undefined ? 0 : redisCpuUs(admin));
/** `run` on a sidecar, with the sidecar's and redis-server's CPU over it per request it answered, µs. */
async function withCpu<T>(s: RunningSidecar, run: () => Promise<T>, answered: (result: T) => number): Promise<{ result: T; cpu: number; redisCpu: number }> {
  const pid = s.program.child.pid;
  const cpu0 = cpuUs(pid);
  const redis0 = await redisCpuSoFar();
  const result = await run();
  const n = Math.max(1, answered(result));
  return { result, cpu: (cpuUs(pid) - cpu0) / n, redisCpu: ((await redisCpuSoFar()) - redis0) / n };
}
const lines: string[] = [`A = ${values.base} (${execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', values.base], { encoding: 'utf8' }).trim()}), B = working tree${values.env.length === 0 ? '' : ` with ${values.env.join(', ')}`}${values['hash-keys'] ? ' with redis.hashKeys' : ''}; ${values.store} store${values.flood ? ', a flood past a limit of 100/s' : ''}; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} at start`];
try {
  const start = (entry: string, env: Record<string, string>, name: string, launcher?: string[]): Promise<RunningSidecar> =>
    startSidecar(entry === entryB ? configB : config, { name, entry: path.relative(repoRoot, entry), env, ...(launcher !== undefined ? { launcher, waitPortMs: 180_000 } : {}) });
  const a = await start(entryA, { ...SIDECAR_ENV }, 'ab-a');
  const b = await start(entryB, envB, 'ab-b');
  const measure = async (s: RunningSidecar) => {
    const { result: w, cpu, redisCpu } = await withCpu(s, () => runWrk({ url: `${s.url}/healthcheck/ready`, connections: 50, threads: 1, durationS, headers }), (r) => r.requests);
    return { rps: w.requests / (w.durationUs / 1e6), cpu, redisCpu };
  };
  // Warm-up: V8 tiers code up by use.
  if (rounds > 0) for (const s of [a, b]) await runWrk({ url: `${s.url}/healthcheck/ready`, connections: 50, threads: 1, durationS: 5, headers });
  const sat = await alternate(a, b, measure, (r, ga, gb) =>
    console.log(`round ${r}: A ${Math.round(ga.rps)} req/s ${ga.cpu.toFixed(1)} µs, B ${Math.round(gb.rps)} req/s ${gb.cpu.toFixed(1)} µs${withRedis ? `; Redis A ${ga.redisCpu.toFixed(1)} µs, B ${gb.redisCpu.toFixed(1)} µs` : ''}`),
  );
  const redisSat = sat.map((side) => side.map((g) => g.redisCpu)) as [number[], number[]];
  const rps = sat.map((side) => side.map((g) => g.rps)) as [number[], number[]];
  const cpu = sat.map((side) => side.map((g) => g.cpu)) as [number[], number[]];
  const ratioRps = perRound(rps, (ga, gb) => gb / ga);
  const ratioCpu = perRound(cpu, (ga, gb) => gb / ga);
  const latency: [Latency[], Latency[]] =
    rate === undefined
      ? [[], []]
      : await alternate(
          a,
          b,
          async (s) => {
            const { result: lg, cpu, redisCpu } = await withCpu(s, () => runRate({ url: `${s.url}/healthcheck/ready`, rate, durationS, connections: 50, headers }), (r) => r.completed);
            return { p50: lg.latencyUs.p50 / 1000, p99: lg.latencyUs.p99 / 1000, p999: lg.latencyUs.p999 / 1000, cpu, redisCpu, errors: lg.errors };
          },
          (r, la, lb) =>
            console.log(`rate round ${r}: p99 A ${la.p99.toFixed(2)} ms, B ${lb.p99.toFixed(2)} ms; CPU A ${la.cpu.toFixed(1)} µs, B ${lb.cpu.toFixed(1)} µs per request${la.errors + lb.errors > 0 ? `; errors A ${la.errors}, B ${lb.errors}` : ''}`),
        );
  const p99Diff = perRound(latency, (la, lb) => lb.p99 - la.p99);
  const rateCpuRatio = perRound(latency, (la, lb) => lb.cpu / la.cpu);
  const peakMiB = [a, b].map((s) => statusKiB(s.program.child.pid as number, 'VmHWM') / 1024);
  await a.program.stop();
  await b.program.stop();
  if (rounds > 0) lines.push(
    '',
    `Wall clock: wrk at saturation, 50 connections, ${rounds} rounds of ${durationS} s per bundle, alternating.`,
    '',
    '| | A | B | B/A per round, median [lowest-highest] |',
    '|---|---:|---:|---:|',
    `| requests/s | ${Math.round(median(rps[0]))} | ${Math.round(median(rps[1]))} | ${spread(ratioRps)} |`,
    `| CPU µs per request | ${median(cpu[0]).toFixed(1)} | ${median(cpu[1]).toFixed(1)} | ${spread(ratioCpu)} |`,
    ...(withRedis ? [`| redis-server CPU µs per request | ${median(redisSat[0]).toFixed(2)} | ${median(redisSat[1]).toFixed(2)} | ${spread(perRound(redisSat, (ga, gb) => gb / Math.max(ga, 1e-9)))} |`] : []),
    `| peak RSS (VmHWM), MiB | ${peakMiB[0]?.toFixed(1)} | ${peakMiB[1]?.toFixed(1)} | ${r2((peakMiB[1] as number) / (peakMiB[0] as number))} (whole run) |`,
  );
  if (rate !== undefined) {
    const col = (i: 0 | 1, k: 'p50' | 'p99' | 'p999' | 'cpu' | 'redisCpu') => median(latency[i].map((l) => l[k])).toFixed(k === 'cpu' ? 1 : 2);
    lines.push(
      '',
      `Fixed rate: bench/loadgen, ${rate} req/s, 50 connections, ${rounds} rounds of ${durationS} s per bundle, alternating; latency in ms, median over the rounds.`,
      '',
      '| | A | B | B - A per round, median [lowest-highest] |',
      '|---|---:|---:|---:|',
      `| p50 | ${col(0, 'p50')} | ${col(1, 'p50')} | |`,
      `| p99 | ${col(0, 'p99')} | ${col(1, 'p99')} | ${spread(p99Diff)} |`,
      `| p99.9 | ${col(0, 'p999')} | ${col(1, 'p999')} | |`,
      `| CPU µs per request | ${col(0, 'cpu')} | ${col(1, 'cpu')} | B/A ${spread(rateCpuRatio)} |`,
      ...(withRedis ? [`| redis-server CPU µs per request | ${col(0, 'redisCpu')} | ${col(1, 'redisCpu')} | |`] : []),
    );
  }
  if (values.callgrind) {
    const outDir = path.join(work, 'callgrind');
    execFileSync('mkdir', ['-p', outDir]);
    const counts = await alternate(
      { name: 'a', entry: entryA, env: { ...SIDECAR_ENV } },
      { name: 'b', entry: entryB, env: envB },
      async ({ name, entry, env }) => {
        const s = await start(entry, env, `ab-callgrind-${name}`, ['valgrind', '--tool=callgrind', `--callgrind-out-file=${path.join(outDir, `${name}.%p`)}`]);
        try {
          const c = await countInstructions({ name, pid: s.program.child.pid as number, url: `${s.url}/healthcheck/ready`, outDir, warmupRequests: 50_000, durationS: 60, headers, log: console.log });
          if (c.errors > 0) console.log(`callgrind ${name}: ${c.errors} errors`);
          return c.instructionsPerRequest;
        } finally {
          await s.program.stop();
        }
      },
      (run, ca, cb) => console.log(`callgrind run ${run}: A ${ca}, B ${cb} instructions per request`),
      callgrindRuns,
    );
    const each = (xs: number[]) => xs.map((x) => x.toLocaleString('en-US')).join(', ');
    lines.push(
      '',
      `callgrind (alone, 50,000 requests of warm-up, 60 s counted, ${callgrindRuns} run${callgrindRuns === 1 ? '' : 's'} of each, alternating): ` +
        `A ${each(counts[0])}, B ${each(counts[1])} instructions per request (B/A of the medians ${r2(median(counts[1]) / median(counts[0]))}).`,
    );
  }
  if (values.alloc) {
    const allocRate = Number(values['alloc-rate']);
    if (!(allocRate > 0)) throw new Error(`--alloc-rate must be a positive number of requests per second, got ${values['alloc-rate']}`);
    const allocs = await alternate(
      { name: 'a', entry: entryA, env: { ...SIDECAR_ENV } },
      { name: 'b', entry: entryB, env: envB },
      async ({ name, entry, env }) => {
        // --trace-gc is not allowed in NODE_OPTIONS: it goes on node's command line.
        const traceGc = ['sh', '-c', 'exec "$0" --trace-gc "$@"'];
        const s = await start(entry, withNodeOptions({ ...env }, `--inspect=127.0.0.1:${await freePort()}`), `ab-alloc-${name}`, traceGc);
        try {
          return await allocation(s, allocRate);
        } finally {
          await s.program.stop();
        }
      },
      (run, x, y) => console.log(`alloc run ${run}: A ${x.bytes}, B ${y.bytes} bytes per request; scavenges per 1,000 requests A ${x.scavenges}, B ${y.scavenges}`),
      callgrindRuns,
    );
    const col = (i: 0 | 1, k: 'bytes' | 'scavenges' | 'majors') => allocs[i].map((x) => x[k]).join(', ');
    lines.push(
      '',
      `Allocation: each bundle alone at ${allocRate} req/s (bench/loadgen), 5 s of warm-up, 10 s sampled, ${callgrindRuns} run${callgrindRuns === 1 ? '' : 's'} of each, alternating.`,
      '',
      '| | A | B | B/A of the medians |',
      '|---|---:|---:|---:|',
      `| bytes allocated per request | ${col(0, 'bytes')} | ${col(1, 'bytes')} | ${r2(median(allocs[1].map((x) => x.bytes)) / median(allocs[0].map((x) => x.bytes)))} |`,
      `| scavenges per 1,000 requests | ${col(0, 'scavenges')} | ${col(1, 'scavenges')} | |`,
      `| major GCs per 1,000 requests | ${col(0, 'majors')} | ${col(1, 'majors')} | |`,
    );
  }
} finally {
  admin?.disconnect();
  await user.stop();
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
}
console.log(`\n${lines.join('\n')}`);

// A/B of two sidecar bundles, to record a change's before and after (bench/README.md lists the
// flags and what each table holds): the working tree's sidecar (B) against a git revision's (A),
// each bundled by its own scripts/bundle.ts and run as deployed (SIDECAR_ENV, a limit nobody
// reaches), behind one user service and one redis-server. Wall clock (wrk at saturation) and
// fixed rate (--rate, bench/loadgen) in rounds taking turns, CPU per request from /proc and
// redis-server's from INFO cpu; --callgrind and --alloc measure each bundle alone (ab-alone.ts).
// Prints Markdown; writes nothing to bench/results (quote it in docs/reference/performance.md).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { type bundleNodeProgram, bundleSidecar } from '../../scripts/bundle.ts';
import type { RunningSidecar } from '../../test/harness/programs.ts';
import { repoRoot, startSidecar, startUserService } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { benchSidecarConfig } from '../lib/fronts.ts';
import { ensureLoadgen, ensureWrk, runRate, runWrk, wrkRps } from '../lib/load.ts';
import { cpuUs, loadavg, median, peakRssMiB, r2, redisCpuUs, spread } from '../lib/measure.ts';
import { interleave, perRound } from '../lib/suite.ts';
import { allocationLines, type Alone, callgrindLines, type Side } from './ab-alone.ts';

const { values, rounds, durationS, callgrindRuns, allocRate, rate, envB } = abOptions();

const work = mkdtempSync(path.join(os.tmpdir(), 'portcullis-ab-'));
const sides: [Side, Side] = [
  { name: 'a', entry: await bundleRevision(values.base, work), env: { ...SIDECAR_ENV } },
  { name: 'b', entry: path.join(work, 'b', 'main.mjs'), env: envB },
];
await bundleSidecar(repoRoot, path.dirname(sides[1].entry));
ensureWrk();
if (rate !== undefined || values.alloc) ensureLoadgen();

const redis = await startRedis();
const user = await startUserService();
const withRedis = values.store === 'redis';
// --flood: a limit of 100 a second (burst 100) for the one user, so nearly every request is refused.
const flood = values.flood
  ? { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 }
  : undefined;
const config = benchSidecarConfig(user.url, withRedis ? redis.url : undefined, flood);
const headers = { 'USER-ID': 'bench-user' };
const admin = withRedis ? new Redis(redis.url) : undefined;

/** `load` on a sidecar: its result, and the sidecar's and redis-server's CPU over it per request answered, µs. */
async function withCpu<T>(s: RunningSidecar, load: () => Promise<T>, answered: (r: T) => number) {
  const pid = s.program.child.pid;
  const redisCpu = async () => (admin === undefined ? 0 : redisCpuUs(admin));
  const [cpu0, redis0] = [cpuUs(pid), await redisCpu()];
  const result = await load();
  const n = Math.max(1, answered(result));
  return { result, cpu: (cpuUs(pid) - cpu0) / n, redisCpu: ((await redisCpu()) - redis0) / n };
}

/** A's and B's medians of `pick`, as two cells of a table. */
const cells = <T>(ab: T[][], pick: (x: T) => number, digits: number) =>
  ab.map((xs) => median(xs.map(pick)).toFixed(digits)).join(' | ');
/** f(A's, B's) of each round: the median [lowest-highest]. */
const perRoundBA = <T>([xa = [], xb = []]: T[][], f: (a: T, b: T) => number) => {
  const s = spread(perRound(xa, xb, f));
  return `${s.median} [${s.low}-${s.high}]`;
};

const rev = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', values.base], {
  encoding: 'utf8',
}).trim();
const lines: string[] = [
  `A = ${values.base} (${rev}), B = working tree${values.env.length === 0 ? '' : ` with ${values.env.join(', ')}`}; ${values.store} store${values.flood ? ', a flood past a limit of 100/s' : ''}; load average ${loadavg(os.loadavg())} at start`,
];
try {
  const start: Alone['start'] = (side, name, launcher, nodeOptions) => {
    const env = { ...side.env };
    if (nodeOptions !== undefined)
      env['NODE_OPTIONS'] = `${env['NODE_OPTIONS'] ?? ''} ${nodeOptions}`;
    return startSidecar(config, {
      name,
      entry: path.relative(repoRoot, side.entry),
      env,
      ...(launcher !== undefined ? { launcher, waitPortMs: 180_000 } : {}),
    });
  };
  const [a, b] = [await start(sides[0], 'ab-a'), await start(sides[1], 'ab-b')];
  const nameOf = (s: RunningSidecar) => (s === a ? 'A' : 'B');
  const url = (s: RunningSidecar) => `${s.url}/healthcheck/ready`;
  const wrk = (s: RunningSidecar, seconds: number) =>
    runWrk({ url: url(s), connections: 50, durationS: seconds, headers });
  // Warm-up: V8 tiers code up by use.
  if (rounds > 0) for (const s of [a, b]) await wrk(s, 5);
  const sat = await interleave([a, b], rounds, async (s, round) => {
    const load = () => wrk(s, durationS);
    const { result, cpu, redisCpu } = await withCpu(s, load, (r) => r.requests);
    const rps = wrkRps(result);
    console.log(
      `round ${round} ${nameOf(s)}: ${Math.round(rps)} req/s ${cpu.toFixed(1)} µs${withRedis ? `; Redis ${redisCpu.toFixed(1)} µs` : ''}`,
    );
    return { rps, cpu, redisCpu };
  });
  const lat =
    rate === undefined
      ? []
      : await interleave([a, b], rounds, async (s, round) => {
          const load = () => runRate({ url: url(s), rate, durationS, connections: 50, headers });
          const { result: lg, cpu, redisCpu } = await withCpu(s, load, (r) => r.completed);
          const { p50, p99, p999 } = lg.latencyUs;
          console.log(
            `rate round ${round} ${nameOf(s)}: p99 ${(p99 / 1000).toFixed(2)} ms; CPU ${cpu.toFixed(1)} µs per request${lg.errors > 0 ? `; ${lg.errors} errors` : ''}`,
          );
          return { p50: p50 / 1000, p99: p99 / 1000, p999: p999 / 1000, cpu, redisCpu };
        });
  const peakMiB = [a, b].map((s) => peakRssMiB(s.program.child.pid));
  await a.program.stop();
  await b.program.stop();
  const redisRow = (cell: string) =>
    withRedis ? [`| redis-server CPU µs per request | ${cell} |`] : [];
  if (rounds > 0)
    lines.push(
      '',
      `Wall clock: wrk at saturation, 50 connections, ${rounds} rounds of ${durationS} s per bundle, alternating.`,
      '',
      '| | A | B | B/A per round, median [lowest-highest] |',
      '|---|---:|---:|---:|',
      `| requests/s | ${cells(sat, (x) => x.rps, 0)} | ${perRoundBA(sat, (x, y) => y.rps / x.rps)} |`,
      `| CPU µs per request | ${cells(sat, (x) => x.cpu, 1)} | ${perRoundBA(sat, (x, y) => y.cpu / x.cpu)} |`,
      ...redisRow(
        `${cells(sat, (x) => x.redisCpu, 2)} | ${perRoundBA(sat, (x, y) => y.redisCpu / Math.max(x.redisCpu, 1e-9))}`,
      ),
      `| peak RSS (VmHWM), MiB | ${peakMiB[0]?.toFixed(1)} | ${peakMiB[1]?.toFixed(1)} | ${r2((peakMiB[1] as number) / (peakMiB[0] as number))} (whole run) |`,
    );
  if (rate !== undefined)
    lines.push(
      '',
      `Fixed rate: bench/loadgen, ${rate} req/s, 50 connections, ${rounds} rounds of ${durationS} s per bundle, alternating; latency in ms, median over the rounds.`,
      '',
      '| | A | B | B - A per round, median [lowest-highest] |',
      '|---|---:|---:|---:|',
      `| p50 | ${cells(lat, (x) => x.p50, 2)} | |`,
      `| p99 | ${cells(lat, (x) => x.p99, 2)} | ${perRoundBA(lat, (x, y) => y.p99 - x.p99)} |`,
      `| p99.9 | ${cells(lat, (x) => x.p999, 2)} | |`,
      `| CPU µs per request | ${cells(lat, (x) => x.cpu, 1)} | B/A ${perRoundBA(lat, (x, y) => y.cpu / x.cpu)} |`,
      ...redisRow(`${cells(lat, (x) => x.redisCpu, 2)} |`),
    );
  const alone: Alone = { sides, start, runs: callgrindRuns, headers };
  if (values.callgrind) lines.push(...(await callgrindLines(alone, path.join(work, 'callgrind'))));
  if (values.alloc) lines.push(...(await allocationLines(alone, allocRate)));
} finally {
  admin?.disconnect();
  await user.program.stop();
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
}
console.log(`\n${lines.join('\n')}`);

/** The command line, checked before anything runs. */
function abOptions() {
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
    },
    strict: true,
  });
  const base = values.base;
  if (base === undefined) throw new Error('--base REV is required (e.g. --base HEAD~1)');
  const whole = (flag: 'rounds' | 'callgrind-runs', least: number) => {
    const n = Number(values[flag]);
    if (!(Number.isInteger(n) && n >= least))
      throw new Error(`--${flag} must be a whole number from ${least}, got ${values[flag]}`);
    return n;
  };
  const perSecond = (flag: 'rate' | 'alloc-rate') => {
    const n = Number(values[flag]);
    if (!(n > 0))
      throw new Error(
        `--${flag} must be a positive number of requests per second, got ${values[flag]}`,
      );
    return n;
  };
  const rounds = whole('rounds', 0); // 0 skips the wall clock
  const rate = values.rate === undefined ? undefined : perSecond('rate');
  if (values.store !== 'redis' && values.store !== 'memory')
    throw new Error(`--store must be redis or memory, got ${values.store}`);
  if (rounds === 0 && (rate !== undefined || !(values.callgrind || values.alloc)))
    throw new Error(
      '--rounds 0 leaves only --callgrind and --alloc to measure (--rate runs in rounds too)',
    );
  const extraEnv = Object.fromEntries(
    values.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  return {
    values: { ...values, base },
    rounds,
    durationS: Number(values.duration),
    callgrindRuns: whole('callgrind-runs', 1),
    allocRate: perSecond('alloc-rate'),
    rate,
    envB: { ...SIDECAR_ENV, ...extraEnv } as Record<string, string>,
  };
}

/**
 * Bundles the sidecar of `rev` with rev's own recipe (scripts/bundle.ts), from a git archive
 * beside the repository's node_modules, into dir.
 */
async function bundleRevision(rev: string, dir: string): Promise<string> {
  const src = path.join(dir, 'src');
  mkdirSync(src, { recursive: true });
  // Older revisions kept the shared code (and the Lua script) under sidecar/; newer ones under lib/.
  const inRev = (p: string) =>
    spawnSync('git', ['-C', repoRoot, 'cat-file', '-e', `${rev}:${p}`]).status === 0;
  const paths = ['sidecar', 'lib', 'scripts/bundle.ts'].filter(inRev);
  execFileSync('sh', [
    '-c',
    `git -C "${repoRoot}" archive "${rev}" ${paths.join(' ')} | tar -x -C "${src}"`,
  ]);
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(src, 'node_modules'));
  const out = path.join(dir, 'a', 'main.mjs');
  const recipe = (await import(path.join(src, 'scripts', 'bundle.ts'))) as {
    bundleNodeProgram: typeof bundleNodeProgram;
  };
  await recipe.bundleNodeProgram(path.join(src, 'sidecar', 'main.ts'), out);
  const lua = ['lib/token-bucket/token-bucket.lua', 'sidecar/stores/token-bucket.lua'].find(inRev);
  if (lua === undefined)
    throw new Error(`${rev} has no token-bucket.lua where this tool looks for it`);
  copyFileSync(path.join(src, lua), path.join(dir, 'a', 'token-bucket.lua'));
  return out;
}

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
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { bundleSidecar } from '../../scripts/bundle.ts';
import { startSidecar, type RunningSidecar } from '../../test/harness/programs.ts';
import { statusKiB } from '../../test/harness/raw-http.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { Redis } from 'ioredis';
import { startUpstream, unreachable } from '../lib/fronts.ts';
import { ensureLoadgen, runRate } from '../lib/loadgen.ts';
import { cpuUs, median, r2 } from '../lib/measure.ts';
import { redisCpuUs } from '../lib/redis-info.ts';
import { ensureWrk, runWrk } from '../lib/wrk.ts';
import { allocationLines, callgrindLines, type Side } from './ab-alone.ts';
import { abOptions } from './ab-options.ts';
import { alternate, perRound, spread } from './ab-rounds.ts';
import { bundleRevision } from './bundle-revision.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values, rounds, durationS, callgrindRuns, rate, envB } = abOptions();

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
  limiter: values.flood
    ? { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 }
    : unreachable,
  ...(values.store === 'redis' ? { redis: { url: redis.url, commandTimeoutMs: 1000 } } : {}),
  logLevel: 'warn' as const,
};
/** B's config: with --hash-keys, the Redis settings the operator renders for a route in namespace `bench`. */
const configB =
  values['hash-keys'] && 'redis' in config
    ? {
        ...config,
        redis: { ...config.redis, keyPrefix: 'portcullis:bucket:bench:', hashKeys: true },
      }
    : config;
const headers = { 'USER-ID': 'bench-user' };
const withRedis = values.store === 'redis';
const admin = withRedis ? new Redis(redis.url) : undefined;
/** redis-server's CPU so far, µs (0 with the memory store). */
const redisCpuSoFar = async (): Promise<number> => (admin === undefined ? 0 : redisCpuUs(admin));
/** `run` on a sidecar, with the sidecar's and redis-server's CPU over it per request it answered, µs. */
async function withCpu<T>(
  s: RunningSidecar,
  run: () => Promise<T>,
  answered: (result: T) => number,
): Promise<{ result: T; cpu: number; redisCpu: number }> {
  const pid = s.program.child.pid;
  const cpu0 = cpuUs(pid);
  const redis0 = await redisCpuSoFar();
  const result = await run();
  const n = Math.max(1, answered(result));
  return { result, cpu: (cpuUs(pid) - cpu0) / n, redisCpu: ((await redisCpuSoFar()) - redis0) / n };
}
const lines: string[] = [
  `A = ${values.base} (${execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', values.base], { encoding: 'utf8' }).trim()}), B = working tree${values.env.length === 0 ? '' : ` with ${values.env.join(', ')}`}${values['hash-keys'] ? ' with redis.hashKeys' : ''}; ${values.store} store${values.flood ? ', a flood past a limit of 100/s' : ''}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')} at start`,
];
try {
  const start = (
    entry: string,
    env: Record<string, string>,
    name: string,
    launcher?: string[],
  ): Promise<RunningSidecar> =>
    startSidecar(entry === entryB ? configB : config, {
      name,
      entry: path.relative(repoRoot, entry),
      env,
      ...(launcher !== undefined ? { launcher, waitPortMs: 180_000 } : {}),
    });
  const a = await start(entryA, { ...SIDECAR_ENV }, 'ab-a');
  const b = await start(entryB, envB, 'ab-b');
  const measure = async (s: RunningSidecar) => {
    const {
      result: w,
      cpu,
      redisCpu,
    } = await withCpu(
      s,
      () =>
        runWrk({
          url: `${s.url}/healthcheck/ready`,
          connections: 50,
          threads: 1,
          durationS,
          headers,
        }),
      (r) => r.requests,
    );
    return { rps: w.requests / (w.durationUs / 1e6), cpu, redisCpu };
  };
  // Warm-up: V8 tiers code up by use.
  if (rounds > 0)
    for (const s of [a, b])
      await runWrk({
        url: `${s.url}/healthcheck/ready`,
        connections: 50,
        threads: 1,
        durationS: 5,
        headers,
      });
  const sat = await alternate(
    a,
    b,
    measure,
    (r, ga, gb) =>
      console.log(
        `round ${r}: A ${Math.round(ga.rps)} req/s ${ga.cpu.toFixed(1)} µs, B ${Math.round(gb.rps)} req/s ${gb.cpu.toFixed(1)} µs${withRedis ? `; Redis A ${ga.redisCpu.toFixed(1)} µs, B ${gb.redisCpu.toFixed(1)} µs` : ''}`,
      ),
    rounds,
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
            const {
              result: lg,
              cpu,
              redisCpu,
            } = await withCpu(
              s,
              () =>
                runRate({
                  url: `${s.url}/healthcheck/ready`,
                  rate,
                  durationS,
                  connections: 50,
                  headers,
                }),
              (r) => r.completed,
            );
            return {
              p50: lg.latencyUs.p50 / 1000,
              p99: lg.latencyUs.p99 / 1000,
              p999: lg.latencyUs.p999 / 1000,
              cpu,
              redisCpu,
              errors: lg.errors,
            };
          },
          (r, la, lb) =>
            console.log(
              `rate round ${r}: p99 A ${la.p99.toFixed(2)} ms, B ${lb.p99.toFixed(2)} ms; CPU A ${la.cpu.toFixed(1)} µs, B ${lb.cpu.toFixed(1)} µs per request${la.errors + lb.errors > 0 ? `; errors A ${la.errors}, B ${lb.errors}` : ''}`,
            ),
          rounds,
        );
  const p99Diff = perRound(latency, (la, lb) => lb.p99 - la.p99);
  const rateCpuRatio = perRound(latency, (la, lb) => lb.cpu / la.cpu);
  const peakMiB = [a, b].map((s) => statusKiB(s.program.child.pid as number, 'VmHWM') / 1024);
  await a.program.stop();
  await b.program.stop();
  if (rounds > 0)
    lines.push(
      '',
      `Wall clock: wrk at saturation, 50 connections, ${rounds} rounds of ${durationS} s per bundle, alternating.`,
      '',
      '| | A | B | B/A per round, median [lowest-highest] |',
      '|---|---:|---:|---:|',
      `| requests/s | ${Math.round(median(rps[0]))} | ${Math.round(median(rps[1]))} | ${spread(ratioRps)} |`,
      `| CPU µs per request | ${median(cpu[0]).toFixed(1)} | ${median(cpu[1]).toFixed(1)} | ${spread(ratioCpu)} |`,
      ...(withRedis
        ? [
            `| redis-server CPU µs per request | ${median(redisSat[0]).toFixed(2)} | ${median(redisSat[1]).toFixed(2)} | ${spread(perRound(redisSat, (ga, gb) => gb / Math.max(ga, 1e-9)))} |`,
          ]
        : []),
      `| peak RSS (VmHWM), MiB | ${peakMiB[0]?.toFixed(1)} | ${peakMiB[1]?.toFixed(1)} | ${r2((peakMiB[1] as number) / (peakMiB[0] as number))} (whole run) |`,
    );
  if (rate !== undefined) {
    const col = (i: 0 | 1, k: 'p50' | 'p99' | 'p999' | 'cpu' | 'redisCpu') =>
      median(latency[i].map((l) => l[k])).toFixed(k === 'cpu' ? 1 : 2);
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
      ...(withRedis
        ? [`| redis-server CPU µs per request | ${col(0, 'redisCpu')} | ${col(1, 'redisCpu')} | |`]
        : []),
    );
  }
  const sides: [Side, Side] = [
    { name: 'a', entry: entryA, env: { ...SIDECAR_ENV } },
    { name: 'b', entry: entryB, env: envB },
  ];
  if (values.callgrind)
    lines.push(
      ...(await callgrindLines(sides, start, path.join(work, 'callgrind'), callgrindRuns, headers)),
    );
  if (values.alloc) {
    const allocRate = Number(values['alloc-rate']);
    if (!(allocRate > 0))
      throw new Error(
        `--alloc-rate must be a positive number of requests per second, got ${values['alloc-rate']}`,
      );
    lines.push(...(await allocationLines(sides, start, allocRate, callgrindRuns, headers)));
  }
} finally {
  admin?.disconnect();
  await user.stop();
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
}
console.log(`\n${lines.join('\n')}`);

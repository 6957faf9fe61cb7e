// Where the p99 at a fixed rate comes from. The gateway suite finds the sidecar's p99 added over
// the direct call several times the bare proxy's at half the sidecar's saturation; this lines every
// slow request up with the garbage-collection pauses of the process that served it.
// The user service, the bare proxy and the sidecar (memory and Redis store) run as in the gateway
// suite, each preloaded with bench/tools/gc-pauses.ts. bench/loadgen sends half of the Redis
// sidecar's saturation on this machine (wrk, as the gateway suite measures it), rounds interleaved,
// and writes every request's intended send time and latency. Per run:
//   slow requests: latency at or above the run's own p99;
//   episodes: 100 ms bins holding slow requests (few bins holding most of them = stalls, not a
//     uniform spread);
//   major GC windows: each major or incremental-marking pause and the 300 ms before it, where
//     V8's concurrent marking threads compete for the same cores; the share of slow requests whose
//     span meets a window, against the share of the run's time the windows cover;
//   machine busy: 1 - idle over all CPUs (/proc/stat), since the load generator, the upstream and
//     the gateway share them.
// `node bench/tools/tail.ts`, or `node bench/run.ts tail` (writes bench/results/tail.{json,md}).
// Env: BENCH_TAIL_RATE (a fixed rate instead of half the saturation), BENCH_TAIL_SECONDS (10),
// BENCH_TAIL_ROUNDS (3), BENCH_TAIL_SIDECAR_NODE_OPTIONS (more V8 flags for both sidecars, to try
// a GC setting against the deployed one: the bare proxy keeps the deployed flags).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { cpuUs, median, rotated, startBareProxy, startBenchSidecar } from '../gateway.ts';
import { ensureWrk, runWrk } from '../gateway-wrk.ts';
import { ensureLoadgen, runRate } from '../loadgen.ts';

const FIXED_RATE = Number(process.env['BENCH_TAIL_RATE'] ?? 0);
const SECONDS = Number(process.env['BENCH_TAIL_SECONDS'] ?? 10);
const ROUNDS = Number(process.env['BENCH_TAIL_ROUNDS'] ?? 3);
const CONNECTIONS = 50;
const BIN_US = 100_000;
/** How long before a major GC pause its concurrent marking is counted as part of it. */
const MARKING_LEAD_US = 300_000;
const SIDECAR_NODE_OPTIONS = process.env['BENCH_TAIL_SIDECAR_NODE_OPTIONS'] ?? '';
const PRELOAD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'gc-pauses.ts');

interface Pause {
  readonly startUs: number;
  readonly us: number;
  readonly kind: number;
}

export interface TailRun {
  readonly target: string;
  readonly round: number;
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly cpuUsPerRequest: number;
  readonly machineBusyPct: number;
  readonly slow: number;
  /** 100 ms bins holding any slow request, and all the run's bins. */
  readonly slowBins: number;
  readonly bins: number;
  /** Share of slow requests in the 3 fullest bins. */
  readonly top3BinsPct: number;
  readonly minorPauses: number;
  readonly minorMeanMs: number;
  readonly minorMaxMs: number;
  readonly majorPauses: number;
  readonly majorMaxMs: number;
  /** Share of slow requests meeting a major GC window, and of the run's time the windows cover. */
  readonly slowInMajorPct: number;
  readonly majorTimePct: number;
}

export interface TailBenchResult {
  readonly suite: 'tail';
  readonly startedAt: string;
  readonly machine: string;
  readonly rate: number;
  /** The Redis sidecar's requests/s at saturation (wrk), when the rate was derived from it. */
  readonly saturation: number | undefined;
  readonly seconds: number;
  readonly rounds: number;
  /** V8 flags added to the sidecars' deployed ones for this run ('' = as deployed). */
  readonly sidecarNodeOptions: string;
  readonly runs: TailRun[];
}

/** CPU time of all CPUs (/proc/stat's first line), busy and total, in ticks. */
function machineTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0); // idle, iowait
  return { busy: total - idle, total };
}

/** The pauses a process wrote at exit; a process that did not exit cleanly left none, and the run cannot be read. */
function readPauses(file: string, target: string): Pause[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${target}: no GC pauses recorded (${(err as Error).message}); did it exit cleanly?`, { cause: err });
  }
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [startUs, us, kind] = l.split(' ').map(Number) as [number, number, number];
      return { startUs, us, kind };
    });
}

/** The analysis of one run: `requests` as [intended send Unix µs, latency µs], the process's pauses. */
export function analyseRun(requests: readonly (readonly [number, number])[], pauses: readonly Pause[], p99Us: number) {
  let t0 = Number.POSITIVE_INFINITY;
  let t1 = 0;
  for (const [at, us] of requests) {
    if (at < t0) t0 = at;
    if (at + us > t1) t1 = at + us;
  }
  const inRun = pauses.filter((p) => p.startUs >= t0 && p.startUs <= t1);
  const minor = inRun.filter((p) => p.kind === 1);
  const major = inRun.filter((p) => p.kind === 2 || p.kind === 4);
  const windows = major.map((p) => [p.startUs - MARKING_LEAD_US, p.startUs + p.us] as const).sort((a, b) => a[0] - b[0]);
  let windowUs = 0;
  let covered = t0;
  for (const [from, to] of windows) {
    const a = Math.max(from, covered, t0);
    const b = Math.min(to, t1);
    if (b > a) windowUs += b - a;
    covered = Math.max(covered, to);
  }
  const slow = requests.filter(([, us]) => us >= p99Us);
  const bins = new Map<number, number>();
  let inMajor = 0;
  for (const [at, us] of slow) {
    const bin = Math.floor((at - t0) / BIN_US);
    bins.set(bin, (bins.get(bin) ?? 0) + 1);
    if (windows.some(([from, to]) => from <= at + us && to >= at)) inMajor++;
  }
  const top3 = [...bins.values()].sort((a, b) => b - a).slice(0, 3).reduce((a, b) => a + b, 0);
  const pct = (x: number, of: number) => (of === 0 ? 0 : Math.round((1000 * x) / of) / 10);
  const ms = (us: number) => Math.round(us / 100) / 10;
  return {
    slow: slow.length,
    slowBins: bins.size,
    bins: Math.ceil((t1 - t0) / BIN_US),
    top3BinsPct: pct(top3, slow.length),
    minorPauses: minor.length,
    minorMeanMs: ms(minor.reduce((a, p) => a + p.us, 0) / Math.max(1, minor.length)),
    minorMaxMs: ms(Math.max(0, ...minor.map((p) => p.us))),
    majorPauses: major.length,
    majorMaxMs: ms(Math.max(0, ...major.map((p) => p.us))),
    slowInMajorPct: pct(inMajor, slow.length),
    majorTimePct: pct(windowUs, t1 - t0),
  };
}

export async function runTailBench(log: (line: string) => void = console.log): Promise<TailBenchResult> {
  ensureLoadgen();
  ensureWrk();
  const startedAt = new Date().toISOString();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-tail-'));
  const gcFile = (name: string) => path.join(dir, `${name}.gc`);
  const preload = (name: string, moreNodeOptions = '') => ({ nodeOptions: `--import ${PRELOAD} ${moreNodeOptions}`.trim(), env: { GC_PAUSES_FILE: gcFile(name) } });
  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'tail-user-service' });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const bare = await startBareProxy(userUrl, 'tail-bare-proxy', preload('bare-proxy'));
  const memory = await startBenchSidecar(userUrl, undefined, 'tail-sidecar-memory', 'deployed', preload('sidecar-memory', SIDECAR_NODE_OPTIONS));
  const viaRedis = await startBenchSidecar(userUrl, redis.url, 'tail-sidecar-redis', 'deployed', preload('sidecar-redis', SIDECAR_NODE_OPTIONS));
  const targets = [
    { name: 'bare-proxy', url: bare.url, pid: bare.pid },
    { name: 'sidecar-memory', url: memory.url, pid: memory.program.child.pid },
    { name: 'sidecar-redis', url: viaRedis.url, pid: viaRedis.program.child.pid },
  ];
  const headers = { 'USER-ID': 'bench-user' };
  let saturation: number | undefined;
  let rate = FIXED_RATE;
  const measured: { target: string; round: number; timeline: string; result: Awaited<ReturnType<typeof runRate>>; cpu: number; busyPct: number }[] = [];
  try {
    if (rate <= 0) {
      const url = `${viaRedis.url}/healthcheck/ready`;
      await runWrk({ url, connections: CONNECTIONS, threads: 1, durationS: 3, headers });
      const w = await runWrk({ url, connections: CONNECTIONS, threads: 1, durationS: 5, headers });
      saturation = Math.round(w.requests / (w.durationUs / 1e6));
      rate = Math.round(saturation / 2);
      log(`sidecar-redis saturation ${saturation} req/s: fixed rate ${rate} req/s`);
    }
    for (const t of targets) await runRate({ url: `${t.url}/healthcheck/ready`, rate, durationS: 5, connections: CONNECTIONS, headers });
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of rotated(targets, round)) {
        const timeline = path.join(dir, `${t.name}-${round}.tl`);
        const cpu0 = cpuUs(t.pid);
        const m0 = machineTicks();
        const result = await runRate({ url: `${t.url}/healthcheck/ready`, rate, durationS: SECONDS, connections: CONNECTIONS, headers, timelineFile: timeline });
        const m1 = machineTicks();
        const busyPct = Math.round((1000 * (m1.busy - m0.busy)) / Math.max(1, m1.total - m0.total)) / 10;
        measured.push({ target: t.name, round, timeline, result, cpu: (cpuUs(t.pid) - cpu0) / Math.max(1, result.completed), busyPct });
        log(`  round ${round + 1} ${t.name}: p99 ${result.latencyUs.p99 / 1000} ms, machine ${busyPct} % busy`);
      }
    }
  } finally {
    // The preload writes the pauses when each process exits.
    await Promise.allSettled([bare.stop(), memory.program.stop(), viaRedis.program.stop()]);
    await user.stop();
    await redis.stop();
  }
  const runs = measured.map((m): TailRun => {
    const requests = readFileSync(m.timeline, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.split(' ').map(Number) as [number, number]);
    const lat = m.result.latencyUs;
    return {
      target: m.target,
      round: m.round + 1,
      requests: m.result.completed,
      p50Ms: lat.p50 / 1000,
      p99Ms: lat.p99 / 1000,
      p999Ms: lat.p999 / 1000,
      cpuUsPerRequest: Math.round(m.cpu * 10) / 10,
      machineBusyPct: m.busyPct,
      ...analyseRun(requests, readPauses(gcFile(m.target), m.target), lat.p99),
    };
  });
  rmSync(dir, { recursive: true, force: true });
  return { suite: 'tail', startedAt, machine: `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`, rate, saturation, seconds: SECONDS, sidecarNodeOptions: SIDECAR_NODE_OPTIONS, rounds: ROUNDS, runs };
}

export function tailMarkdown(r: TailBenchResult): string {
  const names = [...new Set(r.runs.map((x) => x.target))];
  const med = (name: string, f: (x: TailRun) => number) => median(r.runs.filter((x) => x.target === name).map(f));
  return [
    `Tail latency and GC, ${r.startedAt}: ${r.machine}; bench/loadgen at ${r.rate} req/s${r.saturation === undefined ? '' : ` (half the Redis sidecar's ${r.saturation} req/s at saturation, wrk)`}, ${CONNECTIONS} connections, ${r.rounds} interleaved rounds of ${r.seconds} s per target (medians of the rounds).${r.sidecarNodeOptions === '' ? '' : ` Sidecars with \`${r.sidecarNodeOptions}\` added to their V8 flags.`} Slow: at or above the run's own p99. A major GC window is a major or incremental-marking pause and the ${MARKING_LEAD_US / 1000} ms of concurrent marking before it.`,
    '',
    '| target | p50 / p99 / p99.9 ms | CPU µs/req | machine busy | 100 ms bins with slow requests | slow requests in the 3 fullest bins | scavenges: count, mean / max ms | major GC pauses, max ms | slow requests in major GC windows | run time in those windows |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...names.map(
      (n) =>
        `| ${n} | ${med(n, (x) => x.p50Ms)} / ${med(n, (x) => x.p99Ms)} / ${med(n, (x) => x.p999Ms)} | ${med(n, (x) => x.cpuUsPerRequest)} | ${med(n, (x) => x.machineBusyPct)} % | ${med(n, (x) => x.slowBins)} of ${med(n, (x) => x.bins)} | ${med(n, (x) => x.top3BinsPct)} % | ${med(n, (x) => x.minorPauses)}, ${med(n, (x) => x.minorMeanMs)} / ${med(n, (x) => x.minorMaxMs)} | ${med(n, (x) => x.majorPauses)}, ${med(n, (x) => x.majorMaxMs)} | ${med(n, (x) => x.slowInMajorPct)} % | ${med(n, (x) => x.majorTimePct)} % |`,
    ),
    '',
    'Every run:',
    '',
    '| target | round | p99 ms | machine busy | bins with slow requests | top 3 bins | major GC pauses | slow in major GC windows | time in them |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.runs.map((x) => `| ${x.target} | ${x.round} | ${x.p99Ms} | ${x.machineBusyPct} % | ${x.slowBins} | ${x.top3BinsPct} % | ${x.majorPauses} | ${x.slowInMajorPct} % | ${x.majorTimePct} % |`),
  ].join('\n');
}

if (import.meta.main) console.log(tailMarkdown(await runTailBench()));

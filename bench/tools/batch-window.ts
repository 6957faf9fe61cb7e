// The light-load question: there every take is its own script call (RedisBucketStore batches
// only the takes of one event-loop turn). Would holding takes for a short window, so that several
// share one call, lower Redis's CPU per decision without raising p99 measurably?
// An OPEN-loop load against one real redis-server (loopback): a worker thread sleeps (Atomics.wait)
// until each arrival of a Poisson process at a fixed mean rate (seeded: the same arrivals for every
// window), users in turn, and hands the main thread each wakeup's due arrivals in one message, as
// a sidecar reads the sockets that are ready in one poll; the main thread calls take() for each.
// Windows, in a BucketStore decorator written here (lib/token-bucket/ is unchanged):
//   0        today: every take goes to the store at once (the turn's takes form one call);
//   W µs     the first held take opens a window; when W has passed since it, or N takes are held,
//            all held takes go to the store in one turn, so they form one script call. Node's
//            timers have 1 ms granularity, so sub-ms windows poll process time with setImmediate
//            while a take is held: that spins the sidecar's CPU (the bench process CPU column);
//   1000 µs  setTimeout(1): no polling, Node's smallest timer.
// Per point: Redis CPU (INFO cpu, user + sys of the redis-server process, its idle cron included),
// script calls (INFO commandstats), take latency measured in this process from the take() call to
// the decision, and from the scheduled arrival (adds the generator's lateness and the main loop's).
// Rounds are interleaved (the window order rotates each round) and ratios against window 0 are
// taken within a round, then the median is reported. Bounded: ROUNDS (5) x 3 rates x 5 windows x
// SECONDS (3 s), plus a drain of at most DRAIN_MS per point: about 4.5 minutes.
// One file past 300 lines: the decorator and the generator exist only for this experiment; if the
// numbers said adopt, the window would move into lib/token-bucket/redis-store.ts instead.
import { Redis } from 'ioredis';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import type { BucketRule, Decision } from '../../lib/token-bucket/bucket.ts';
import type { BucketStore, TakeSink } from '../../lib/token-bucket/bucket-store.ts';
import { RedisBucketStore } from '../../lib/token-bucket/redis-store.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { median } from '../gateway.ts';
import { redisCpuUs, scriptCalls } from '../redis-cost.ts';

const RATES = (process.env['BENCH_BATCH_WINDOW_RATES'] ?? '500,2000,10000').split(',').map(Number).filter((n) => n > 0);
const SECONDS = Number(process.env['BENCH_BATCH_WINDOW_SECONDS'] ?? 3);
const ROUNDS = Number(process.env['BENCH_BATCH_WINDOW_ROUNDS'] ?? 5);
/** Longest wait for the last decisions of a point after its last arrival, ms. */
const DRAIN_MS = 3000;
const USERS = 1000;
/** Takes held at most before the window closes early. */
const MAX_HELD = 32;
const RULE: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };

interface HoldWindow {
  /** 0: no hold (today). */
  readonly us: number;
  readonly how: 'none' | 'setImmediate polling' | 'setTimeout';
}
const WINDOWS: HoldWindow[] = [
  { us: 0, how: 'none' },
  { us: 100, how: 'setImmediate polling' },
  { us: 200, how: 'setImmediate polling' },
  { us: 500, how: 'setImmediate polling' },
  { us: 1000, how: 'setTimeout' },
];

interface HeldTake {
  readonly key: string;
  readonly rules: readonly BucketRule[];
  readonly costs: readonly number[];
  readonly sink: TakeSink;
}

/** A BucketStore that holds takes for up to `window.us` (or MAX_HELD takes), then hands them all to `inner` in one turn. */
export class HoldWindowStore implements BucketStore {
  #held: HeldTake[] = [];
  /** performance.now() of the first held take, ms. */
  #firstAt = 0;
  #polling = false;
  #timer: NodeJS.Timeout | undefined;
  readonly inner: BucketStore;
  readonly window: HoldWindow;

  constructor(inner: BucketStore, window: HoldWindow) {
    this.inner = inner;
    this.window = window;
  }

  take(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<Decision> {
    return new Promise((resolve, reject) => this.takeAllInto(key, [rule], [cost], { taken: resolve, failed: reject }));
  }

  takeInto(key: string, rule: BucketRule, cost: number, sink: TakeSink): void {
    this.takeAllInto(key, [rule], [cost], sink);
  }

  takeAll(key: string, rules: readonly BucketRule[], costs: readonly number[] = rules.map((r) => r.requestedTokens)): Promise<Decision> {
    return new Promise((resolve, reject) => this.takeAllInto(key, rules, costs, { taken: resolve, failed: reject }));
  }

  takeAllInto(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void {
    if (this.window.us === 0) {
      this.inner.takeAllInto(key, rules, costs, sink);
      return;
    }
    this.#held.push({ key, rules, costs, sink });
    if (this.#held.length >= MAX_HELD) {
      this.#release();
      return;
    }
    if (this.#held.length > 1) return;
    this.#firstAt = performance.now();
    if (this.window.how === 'setTimeout') this.#timer = setTimeout(this.#release, this.window.us / 1000);
    else if (!this.#polling) {
      this.#polling = true;
      setImmediate(this.#poll);
    }
  }

  /** Spins through the event loop (I/O still runs) until the window of the first held take has passed. */
  readonly #poll = (): void => {
    if (this.#held.length > 0 && (performance.now() - this.#firstAt) * 1000 >= this.window.us) this.#release();
    if (this.#held.length === 0) this.#polling = false;
    else setImmediate(this.#poll);
  };

  /** Every held take to the inner store in this turn: one script call. */
  readonly #release = (): void => {
    clearTimeout(this.#timer);
    const held = this.#held;
    this.#held = [];
    for (const t of held) this.inner.takeAllInto(t.key, t.rules, t.costs, t.sink);
  };

  ready(): Promise<void> {
    return this.inner.ready();
  }

  isReady(): boolean {
    return this.inner.isReady();
  }

  async close(): Promise<void> {
    this.#release();
  }
}

/**
 * The arrival generator (a worker, CommonJS): per {rate, seconds, seed, startNs}, sleeps until each
 * Poisson arrival and posts the due ones as [user, scheduled ns, ...]; then {sent}. Times are ns
 * since workerData.base (process.hrtime, one clock for both threads).
 */
const GENERATOR = `
const { parentPort, workerData } = require('node:worker_threads');
const now = () => Number(process.hrtime.bigint() - workerData.base);
const nap = new Int32Array(new SharedArrayBuffer(4));
parentPort.on('message', ({ rate, seconds, users, seed, startNs }) => {
  let s = seed >>> 0;
  const random = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const gap = () => (-Math.log(1 - random()) / rate) * 1e9;
  const endNs = startNs + seconds * 1e9;
  let next = startNs + gap();
  let user = 0;
  let sent = 0;
  while (next < endNs) {
    const wait = next - now();
    if (wait > 0) Atomics.wait(nap, 0, 0, wait / 1e6);
    const t = now();
    const due = [];
    while (next <= t && next < endNs) {
      due.push(user, next);
      user = (user + 1) % users;
      next += gap();
      sent++;
    }
    if (due.length > 0) parentPort.postMessage(due);
  }
  parentPort.postMessage({ sent });
});
`;

export interface BatchWindowPoint {
  readonly round: number;
  readonly offeredPerSecond: number;
  readonly windowUs: number;
  readonly arrivals: number;
  readonly decisions: number;
  readonly errors: number;
  readonly achievedPerSecond: number;
  readonly takesPerScriptCall: number;
  /** redis-server user + sys CPU over the point per decision, µs. */
  readonly redisCpuUsPerDecision: number;
  /** This process's CPU (generator thread, store, window) per decision, µs. */
  readonly benchCpuUsPerDecision: number;
  /** From the take() call to the decision, µs. */
  readonly takeUs: { p50: number; p99: number; p999: number; max: number };
  /** From the scheduled arrival to the decision, µs. */
  readonly arrivalUs: { p50: number; p99: number };
}

export interface BatchWindowRow {
  readonly offeredPerSecond: number;
  readonly windowUs: number;
  readonly how: HoldWindow['how'];
  /** Medians over the rounds. */
  readonly achievedPerSecond: number;
  readonly takesPerScriptCall: number;
  readonly redisCpuUsPerDecision: number;
  readonly benchCpuUsPerDecision: number;
  readonly takeP50Us: number;
  readonly takeP99Us: number;
  /** Lowest and highest take p99 over the rounds, µs (how much p99 moves between rounds on this machine). */
  readonly takeP99RoundsUs: [number, number];
  readonly arrivalP99Us: number;
  readonly errors: number;
  /** Median over the rounds of this window's figure / window 0's in the same round, with the lowest and highest round. */
  readonly redisCpuRatio: [number, number, number];
  readonly p99Ratio: [number, number, number];
  /** Median over the rounds of this window's take p99 minus window 0's, µs. */
  readonly p99AddedUs: number;
}

export interface BatchWindowBenchResult {
  readonly suite: 'batch-window';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; redis: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly load: { users: number; rule: BucketRule; secondsPerPoint: number; rounds: number; maxHeld: number; arrivals: string };
  /** redis-server CPU with no client load (its cron), µs per second. */
  readonly redisIdleCpuUsPerSecond: number;
  readonly rows: BatchWindowRow[];
  readonly points: BatchWindowPoint[];
  readonly verdict: { adopt: boolean; text: string };
}

const round2 = (x: number) => Math.round(x * 100) / 100;
const quantile = (sorted: Float64Array, q: number) => (sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number));

interface Bench {
  readonly admin: Redis;
  readonly inner: RedisBucketStore;
  readonly generator: Worker;
  readonly base: bigint;
}

async function runPoint(b: Bench, rate: number, window: HoldWindow, round: number, seconds: number): Promise<BatchWindowPoint> {
  const store = new HoldWindowStore(b.inner, window);
  const now = () => Number(process.hrtime.bigint() - b.base);
  await b.admin.flushall();
  await b.admin.config('RESETSTAT');
  const takeUs: number[] = [];
  const arrivalUs: number[] = [];
  let decisions = 0;
  let errors = 0;
  let lastDecisionNs = 0;
  let sent = -1;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const settled = () => {
    lastDecisionNs = now();
    if (sent >= 0 && decisions + errors === sent) finish();
  };
  const onMessage = (msg: number[] | { sent: number }) => {
    if (!Array.isArray(msg)) {
      sent = msg.sent;
      if (decisions + errors === sent) finish();
      return;
    }
    for (let i = 0; i < msg.length; i += 2) {
      const scheduled = msg[i + 1] as number;
      const called = now();
      store.takeInto(`u${msg[i]}`, RULE, 1, {
        taken: () => {
          decisions++;
          const at = now();
          takeUs.push((at - called) / 1e3);
          arrivalUs.push((at - scheduled) / 1e3);
          settled();
        },
        failed: () => {
          errors++;
          settled();
        },
      });
    }
  };
  b.generator.on('message', onMessage);
  const cpuBefore = await redisCpuUs(b.admin);
  const ownBefore = process.cpuUsage();
  const startNs = now() + 5e6;
  b.generator.postMessage({ rate, seconds, users: USERS, seed: 1000 * round + rate, startNs });
  let drain: NodeJS.Timeout | undefined;
  await Promise.race([finished, new Promise((r) => (drain = setTimeout(r, seconds * 1000 + DRAIN_MS)))]);
  clearTimeout(drain);
  b.generator.off('message', onMessage);
  const own = process.cpuUsage(ownBefore);
  const redisCpu = (await redisCpuUs(b.admin)) - cpuBefore;
  const calls = await scriptCalls(b.admin);
  await store.close();
  const take = Float64Array.from(takeUs).sort();
  const arrival = Float64Array.from(arrivalUs).sort();
  const q = (s: Float64Array, x: number) => Math.round(quantile(s, x));
  return {
    round,
    offeredPerSecond: rate,
    windowUs: window.us,
    arrivals: sent,
    decisions,
    errors: errors + Math.max(0, sent - decisions - errors),
    achievedPerSecond: Math.round(decisions / ((lastDecisionNs - startNs) / 1e9)),
    takesPerScriptCall: round2(decisions / Math.max(1, calls)),
    redisCpuUsPerDecision: round2(redisCpu / Math.max(1, decisions)),
    benchCpuUsPerDecision: round2((own.user + own.system) / Math.max(1, decisions)),
    takeUs: { p50: q(take, 0.5), p99: q(take, 0.99), p999: q(take, 0.999), max: q(take, 1) },
    arrivalUs: { p50: q(arrival, 0.5), p99: q(arrival, 0.99) },
  };
}

function summarize(points: BatchWindowPoint[]): BatchWindowRow[] {
  const rows: BatchWindowRow[] = [];
  for (const rate of RATES) {
    for (const window of WINDOWS) {
      const mine = points.filter((p) => p.offeredPerSecond === rate && p.windowUs === window.us);
      const base = (p: BatchWindowPoint) => points.find((x) => x.offeredPerSecond === rate && x.windowUs === 0 && x.round === p.round) as BatchWindowPoint;
      const spread = (f: (p: BatchWindowPoint) => number): [number, number, number] => {
        const xs = mine.map(f);
        return [round2(median(xs)), round2(Math.min(...xs)), round2(Math.max(...xs))];
      };
      const m = (f: (p: BatchWindowPoint) => number) => round2(median(mine.map(f)));
      rows.push({
        offeredPerSecond: rate,
        windowUs: window.us,
        how: window.how,
        achievedPerSecond: Math.round(median(mine.map((p) => p.achievedPerSecond))),
        takesPerScriptCall: m((p) => p.takesPerScriptCall),
        redisCpuUsPerDecision: m((p) => p.redisCpuUsPerDecision),
        benchCpuUsPerDecision: m((p) => p.benchCpuUsPerDecision),
        takeP50Us: Math.round(median(mine.map((p) => p.takeUs.p50))),
        takeP99Us: Math.round(median(mine.map((p) => p.takeUs.p99))),
        takeP99RoundsUs: [Math.min(...mine.map((p) => p.takeUs.p99)), Math.max(...mine.map((p) => p.takeUs.p99))],
        arrivalP99Us: Math.round(median(mine.map((p) => p.arrivalUs.p99))),
        errors: mine.reduce((n, p) => n + p.errors, 0),
        redisCpuRatio: spread((p) => p.redisCpuUsPerDecision / base(p).redisCpuUsPerDecision),
        p99Ratio: spread((p) => p.takeUs.p99 / base(p).takeUs.p99),
        p99AddedUs: Math.round(median(mine.map((p) => p.takeUs.p99 - base(p).takeUs.p99))),
      });
    }
  }
  return rows;
}

/**
 * Adopt a window only if, at every rate, it lowers Redis CPU per decision by at least 10 % (median
 * of the per-round ratios to window 0) and in every round, and raises take p99 by at most 5 %
 * (median of the per-round ratios). The burden of proof is on the window: noise counts against it.
 */
function verdict(rows: BatchWindowRow[]): { adopt: boolean; text: string } {
  const at = (rate: number, us: number) => rows.find((r) => r.offeredPerSecond === rate && r.windowUs === us) as BatchWindowRow;
  const saves = (r: BatchWindowRow) => r.redisCpuRatio[0] <= 0.9 && r.redisCpuRatio[2] < 1;
  const quiet = (r: BatchWindowRow) => r.p99Ratio[0] <= 1.05;
  const held = WINDOWS.filter((w) => w.us > 0);
  const good = held.filter((w) => RATES.every((rate) => saves(at(rate, w.us)) && quiet(at(rate, w.us))));
  const light = Math.min(...RATES);
  const heavy = Math.max(...RATES);
  const pct = (x: number) => `${Math.round((1 - x) * 100)} %`;
  const describe = (rate: number) =>
    held
      .map((w) => {
        const r = at(rate, w.us);
        return `${w.us} µs: ${r.takesPerScriptCall} takes/call, Redis CPU ${r.redisCpuRatio[0]}x (${pct(r.redisCpuRatio[0])} less), p99 ${r.p99Ratio[0]}x (${r.p99AddedUs >= 0 ? '+' : ''}${r.p99AddedUs} µs)`;
      })
      .join('; ');
  const z = at(light, 0);
  const facts =
    `At ${light} takes/s window 0 already costs ${z.redisCpuUsPerDecision} µs of Redis CPU per decision at ${z.takesPerScriptCall} takes per call, p99 ${z.takeP99Us} µs (${z.takeP99RoundsUs[0]}-${z.takeP99RoundsUs[1]} over the rounds); the windows give ${describe(light)}. ` +
    `At ${heavy} takes/s (window 0: ${at(heavy, 0).takesPerScriptCall} takes/call, ${at(heavy, 0).redisCpuUsPerDecision} µs, p99 ${at(heavy, 0).takeP99Us} µs): ${describe(heavy)}. ` +
    `The sub-ms windows also spin the sidecar's event loop while a take is held: this process's CPU per decision at ${light} / ${heavy} takes/s was ${WINDOWS.map((w) => `${at(light, w.us).benchCpuUsPerDecision} / ${at(heavy, w.us).benchCpuUsPerDecision} µs at ${w.us} µs`).join(', ')}.`;
  const named = held.find((w) => w.us === 200) ?? (held[0] as HoldWindow);
  if (good.length > 0) {
    const w = good[0] as HoldWindow;
    return { adopt: true, text: `**Verdict: adopt a ${w.us} µs window.** At every rate it lowered Redis CPU per decision by at least 10 % (median over the rounds, and lower in every round) and raised take p99 by at most 5 %. ${facts}` };
  }
  return {
    adopt: false,
    text:
      `**Verdict: do not adopt.** No window, at every rate, lowered Redis CPU per decision by at least 10 % (median over the rounds, and lower in every round) while raising take p99 by at most 5 %. ` +
      `A held take waits for company, and at ${light} takes/s little comes: the ${named.us} µs window put ${at(light, named.us).takesPerScriptCall} takes in a script call against ${z.takesPerScriptCall} at window 0, so it delays nearly every take and saves few calls. ${facts}`,
  };
}

export async function runBatchWindowBench(log: (line: string) => void): Promise<BatchWindowBenchResult> {
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const inner = new RedisBucketStore({ url: redis.url, keyPrefix: 'bw:', commandTimeoutMs: 1000 });
  const base = process.hrtime.bigint();
  const generator = new Worker(GENERATOR, { eval: true, workerData: { base } });
  const b: Bench = { admin, inner, generator, base };
  try {
    await inner.ready();
    const version = /^redis_version:(\S+)/m.exec(await admin.info('server'))?.[1] ?? '?';
    for (let i = 0; i < 500; i++) await inner.take(`u${i % USERS}`, RULE); // script loaded, connection warm
    const idleBefore = await redisCpuUs(admin);
    await new Promise((r) => setTimeout(r, 2000));
    const redisIdleCpuUsPerSecond = Math.round(((await redisCpuUs(admin)) - idleBefore) / 2);
    log(`  redis-server idle: ${redisIdleCpuUsPerSecond} µs CPU/s`);
    for (const w of WINDOWS) await runPoint(b, RATES[Math.floor(RATES.length / 2)] as number, w, -1, 1); // warm-up, discarded
    const points: BatchWindowPoint[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const rate of RATES) {
        for (let k = 0; k < WINDOWS.length; k++) {
          const w = WINDOWS[(k + round) % WINDOWS.length] as HoldWindow;
          const p = await runPoint(b, rate, w, round, SECONDS);
          points.push(p);
          log(
            `  round ${round + 1} ${rate}/s window ${w.us} µs: ${p.achievedPerSecond}/s, ${p.takesPerScriptCall} takes/call, Redis ${p.redisCpuUsPerDecision} µs/decision, bench ${p.benchCpuUsPerDecision} µs, take p50/p99 ${p.takeUs.p50}/${p.takeUs.p99} µs, errors ${p.errors}`,
          );
        }
      }
    }
    const rows = summarize(points);
    return {
      suite: 'batch-window',
      startedAt: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '?', node: process.version, redis: version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
      load: { users: USERS, rule: RULE, secondsPerPoint: SECONDS, rounds: ROUNDS, maxHeld: MAX_HELD, arrivals: 'Poisson, seeded per round and rate, users in turn' },
      redisIdleCpuUsPerSecond,
      rows,
      points,
      verdict: verdict(rows),
    };
  } finally {
    await generator.terminate();
    await inner.close();
    admin.disconnect();
    await redis.stop();
  }
}

export function batchWindowMarkdown(r: BatchWindowBenchResult): string {
  const ratio = (x: [number, number, number]) => `${x[0]}x (${x[1]}-${x[2]})`;
  return [
    '### Batching window at light load (open loop)',
    '',
    `${r.startedAt}: one redis-server ${r.machine.redis} on loopback, ${r.machine.cpus} CPUs (${r.machine.model}), Node ${r.machine.node}; load average ${r.machine.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')} at start, ${r.machine.loadavgAtEnd.map((x) => x.toFixed(1)).join(' ')} at end. ` +
      `Open loop: ${r.load.arrivals}, ${r.load.users} users, rule ${r.load.rule.replenishRate}/s burst ${r.load.rule.burstCapacity}; a worker thread sleeps until each arrival and hands the main thread the due ones, which call take() on RedisBucketStore (today's per-turn batching) through a hold-window decorator. ` +
      `A window of W µs holds takes until W has passed since the first held one or ${r.load.maxHeld} are held, then sends them in one turn (one script call). The sub-ms windows poll process time with setImmediate while a take is held, because Node's timers have 1 ms granularity: that spins the sidecar's CPU (the bench process CPU column: generator thread, store and window); 1000 µs uses setTimeout(1) and does not spin. ` +
      `Median of ${r.load.rounds} interleaved rounds of ${r.load.secondsPerPoint} s per point; ratios are taken against window 0 within each round (median, lowest-highest round). Redis CPU is the process's user + sys time over the point (INFO cpu), its idle cron included (${r.redisIdleCpuUsPerSecond} µs/s measured idle); take latency is measured in the process from the take() call to the decision, "from arrival" from the scheduled arrival (adds the generator's wakeup lateness and the main loop's delay).`,
    '',
    '| offered takes/s | window µs | held by | achieved takes/s | takes per script call | Redis CPU µs/decision | Redis CPU / window 0 | take p50 / p99 µs | p99 / window 0 | p99 added µs | p99 from arrival µs | bench process CPU µs/decision | errors |',
    '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map(
      (x) =>
        `| ${x.offeredPerSecond} | ${x.windowUs} | ${x.how} | ${x.achievedPerSecond} | ${x.takesPerScriptCall} | ${x.redisCpuUsPerDecision} | ${x.windowUs === 0 ? '-' : ratio(x.redisCpuRatio)} | ${x.takeP50Us} / ${x.takeP99Us} | ${x.windowUs === 0 ? `(rounds ${x.takeP99RoundsUs[0]}-${x.takeP99RoundsUs[1]} µs)` : ratio(x.p99Ratio)} | ${x.windowUs === 0 ? '-' : x.p99AddedUs} | ${x.arrivalP99Us} | ${x.benchCpuUsPerDecision} | ${x.errors} |`,
    ),
    '',
    r.verdict.text,
  ].join('\n');
}

// Limiter accuracy under contention: three gateway processes sharing one Redis, 60
// keep-alive connections (20 per process) on ONE key for BENCH_ACCURACY_S (6 s), for
//   portcullis  three sidecars, token bucket replenishRate 100/s, burstCapacity 100, cost 1;
//   node-peer   three fastify + @fastify/rate-limit processes, fixed window max 100 per 1 s
//               (the same "100 per second" as a fixed window: its only algorithm);
//   portcullis-two-limits  three sidecars whose one rule carries two buckets, 100/s burst 100 and
//               40/s burst 150 (every admitted request charges both in one atomic call): the bound
//               is the tighter of the two, and over-admission must stay at 0 all the same.
// Reported per limiter:
//   - admitted against the exact bound of the policy, 100 + 100/s x T, with T the span of the
//     decisions (Portcullis: Redis TIME of the first and last decision, read from the bucket; the
//     peer keeps no time in Redis: first send to last admitted answer on the client, which only
//     makes its bound more generous); over-admission = admitted - bound (<= 0 is exact);
//   - the most admitted in any 1 s interval after the first second (client-side answer times):
//     under unbroken contention a token bucket admits ~100 (its refill) and a fixed window up to
//     200 (its whole quota at each window start, two starts 1 s apart in one interval); when the
//     clients stall (a busy machine) the bucket refills and may also reach its worst case, 200.
// BENCH_ROUNDS rounds alternate the two; the median round is reported.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { Pool } from 'undici';
import { decodeBucketValue } from '../lib/token-bucket/bucket-value.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram, startSidecar, startUserService, type Program } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';

const RATE = 100;
const BURST = 100;
/** The second bucket of the two-limit rule: it binds after the first 1.5 s. */
const SECOND = { replenishRate: 40, burstCapacity: 150 };
const WINDOW_MS = 1000;
const PROCESSES = 3;
const CONNECTIONS_PER_PROCESS = 20;

export interface AccuracyRound {
  readonly admitted: number;
  readonly limited: number;
  readonly other: number;
  readonly spanMs: number;
  readonly bound: number;
  readonly overAdmitted: number;
  readonly maxInAnySecondAfterFirst: number;
}

export interface AccuracyLimiterResult {
  readonly name: string;
  readonly description: string;
  readonly median: AccuracyRound;
  readonly rounds: AccuracyRound[];
}

export interface AccuracyBenchResult {
  readonly suite: 'accuracy';
  readonly startedAt: string;
  readonly machine: { cpus: number; node: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly setup: { processes: number; connections: number; durationS: number; policy: string };
  readonly limiters: AccuracyLimiterResult[];
}

/** Most timestamps (ms, sorted) inside any interval of `width` ms. */
function maxInWindow(sorted: number[], width: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while ((sorted[hi] as number) - (sorted[lo] as number) >= width) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

async function hammer(urls: string[], key: string, durationMs: number, afterFirst: () => Promise<void>) {
  const pools = urls.map((u) => new Pool(u, { connections: CONNECTIONS_PER_PROCESS }));
  const send = async (pool: Pool, userId: string) => {
    const res = await pool.request({ method: 'GET', path: '/healthcheck/ready', headers: { 'user-id': userId } });
    await res.body.dump();
    return res.statusCode;
  };
  // Open every connection first (another key), so the measured part is steady.
  await Promise.all(pools.flatMap((p) => Array.from({ length: CONNECTIONS_PER_PROCESS }, () => send(p, `warm-${key}`))));
  // One request alone opens the bucket or window (and tells Portcullis' Redis time of it).
  const start = performance.now();
  const firstStatus = await send(pools[0] as Pool, key);
  await afterFirst();
  const admittedAt: number[] = firstStatus === 200 ? [0] : [];
  let limited = firstStatus === 429 ? 1 : 0;
  let other = firstStatus === 200 || firstStatus === 429 ? 0 : 1;
  const until = start + durationMs;
  await Promise.all(
    pools.flatMap((pool) =>
      Array.from({ length: CONNECTIONS_PER_PROCESS }, async () => {
        while (performance.now() < until) {
          const status = await send(pool, key);
          if (status === 200) admittedAt.push(performance.now() - start);
          else if (status === 429) limited++;
          else other++;
        }
      }),
    ),
  );
  await Promise.all(pools.map((p) => p.close()));
  admittedAt.sort((a, b) => a - b);
  return { admittedAt, limited, other };
}

export async function runAccuracyBench(log: (line: string) => void = console.log): Promise<AccuracyBenchResult> {
  const durationMs = Number(process.env['BENCH_ACCURACY_S'] ?? 6) * 1000;
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const storedUs = async (bucketKey: string) => decodeBucketValue(await admin.getBuffer(bucketKey))?.updatedUs ?? Number.NaN;
  const user = await startUserService();
  const programs: Program[] = [];
  const sidecarUrls: string[] = [];
  const peerUrls: string[] = [];
  const twoLimitUrls: string[] = [];
  const out = new Map<string, AccuracyRound[]>([['portcullis', []], ['node-peer', []], ['portcullis-two-limits', []]]);
  try {
    for (let i = 0; i < PROCESSES; i++) {
      const s = await startSidecar(
        {
          upstream: { url: user.url },
          route: { id: 'acc' },
          limiter: { replenishRate: RATE, burstCapacity: BURST, requestedTokens: 1, onStoreError: 'deny' },
          redis: { url: redis.url, commandTimeoutMs: 5000 },
          logLevel: 'warn',
        },
        { name: `accuracy-sidecar-${i}` },
      );
      programs.push(s.program);
      sidecarUrls.push(s.url);
      const port = await freePort();
      programs.push(
        await startProgram({
          entry: 'bench/peers/node-peer.ts',
          name: `accuracy-node-peer-${i}`,
          waitPort: port,
          env: { PORT: String(port), UPSTREAM_URL: user.url, REDIS_URL: redis.url, MAX: String(BURST), WINDOW_MS: String(WINDOW_MS) },
        }),
      );
      peerUrls.push(`http://127.0.0.1:${port}`);
      const two = await startSidecar(
        {
          upstream: { url: user.url },
          route: { id: 'acc2' },
          limiter: {
            rules: [{ name: 'r', limits: [{ replenishRate: RATE, burstCapacity: BURST, requestedTokens: 1 }, { ...SECOND, requestedTokens: 1 }] }],
            onStoreError: 'deny',
          },
          redis: { url: redis.url, commandTimeoutMs: 5000 },
          logLevel: 'warn',
        },
        { name: `accuracy-two-limits-${i}` },
      );
      programs.push(two.program);
      twoLimitUrls.push(two.url);
    }
    for (let round = 1; round <= rounds; round++) {
      {
        const key = `acc-${round}`;
        // The bucket's stored time is Redis' time (µs) of its latest admitted take (a refusal writes nothing).
        const bucketKey = `portcullis:bucket:v2:{acc:${key}}`;
        let firstUs = 0;
        const r = await hammer(sidecarUrls, key, durationMs, async () => {
          firstUs = await storedUs(bucketKey);
        });
        const lastUs = await storedUs(bucketKey);
        const spanMs = (lastUs - firstUs) / 1000;
        out.get('portcullis')?.push(summarise(r, spanMs));
      }
      {
        const key = `acc-${round}`;
        const r = await hammer(peerUrls, key, durationMs, async () => {});
        const spanMs = r.admittedAt.length === 0 ? 0 : (r.admittedAt.at(-1) as number);
        out.get('node-peer')?.push(summarise(r, spanMs));
      }
      {
        const key = `acc-${round}`;
        const bucketKey = `portcullis:bucket:v2:{acc2:r:${key}}`;
        let firstUs = 0;
        const r = await hammer(twoLimitUrls, key, durationMs, async () => {
          firstUs = await storedUs(bucketKey);
        });
        const spanMs = ((await storedUs(bucketKey)) - firstUs) / 1000;
        out.get('portcullis-two-limits')?.push(summarise(r, spanMs, twoLimitBound(spanMs)));
      }
      for (const [name, rs] of out) {
        const x = rs.at(-1);
        if (x !== undefined) log(`  round ${round} ${name}: admitted ${x.admitted}, bound ${x.bound}, over-admitted ${x.overAdmitted}, most in any 1 s after the first ${x.maxInAnySecondAfterFirst}`);
      }
    }
  } finally {
    for (const p of programs) await p.stop();
    await user.program.stop();
    admin.disconnect();
    await redis.stop();
  }
  const describe = {
    portcullis: `Portcullis sidecars, token bucket ${RATE}/s, burst ${BURST}`,
    'node-peer': `@fastify/rate-limit Redis store, fixed window ${BURST} per ${WINDOW_MS} ms`,
    'portcullis-two-limits': `Portcullis sidecars, one rule with two buckets: ${RATE}/s burst ${BURST} and ${SECOND.replenishRate}/s burst ${SECOND.burstCapacity} (bound: the tighter)`,
  };
  return {
    suite: 'accuracy',
    startedAt,
    machine: { cpus: os.cpus().length, node: process.version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
    setup: { processes: PROCESSES, connections: PROCESSES * CONNECTIONS_PER_PROCESS, durationS: durationMs / 1000, policy: `${RATE} per second, burst ${BURST}, one key` },
    limiters: [...out].map(([name, rs]) => ({
      name,
      description: describe[name as keyof typeof describe],
      median: [...rs].sort((a, b) => a.overAdmitted - b.overAdmitted)[Math.floor(rs.length / 2)] as AccuracyRound,
      rounds: rs,
    })),
  };
}

/** The two-limit rule's exact bound over `spanMs`: the tighter of its two buckets'. */
function twoLimitBound(spanMs: number): number {
  return Math.min(Math.floor(BURST + (RATE * spanMs) / 1000), Math.floor(SECOND.burstCapacity + (SECOND.replenishRate * spanMs) / 1000));
}

function summarise(r: { admittedAt: number[]; limited: number; other: number }, spanMs: number, bound = Math.floor(BURST + (RATE * spanMs) / 1000)): AccuracyRound {
  const steady = r.admittedAt.filter((t) => t >= (r.admittedAt[0] ?? 0) + 1000);
  return {
    admitted: r.admittedAt.length,
    limited: r.limited,
    other: r.other,
    spanMs: Math.round(spanMs),
    bound,
    overAdmitted: r.admittedAt.length - bound,
    maxInAnySecondAfterFirst: maxInWindow(steady, 1000),
  };
}

export function accuracyMarkdown(r: AccuracyBenchResult): string {
  return [
    `Limiter accuracy, ${r.startedAt}: ${r.setup.processes} processes sharing one Redis, ${r.setup.connections} connections, one key, ${r.setup.durationS} s per round, ` +
      `policy ${r.setup.policy}; median of ${r.limiters[0]?.rounds.length ?? 0} rounds; load average ${r.machine.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')} at start.`,
    '',
    '| limiter | admitted | exact bound (burst + rate x span) | over-admitted | over-admission | most admitted in any 1 s (after the first) | 429s |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...r.limiters.map(
      (l) =>
        `| ${l.description} | ${l.median.admitted} | ${l.median.bound} | ${l.median.overAdmitted} | ${((100 * Math.max(0, l.median.overAdmitted)) / Math.max(1, l.median.bound)).toFixed(1)} % | ` +
        `${l.median.maxInAnySecondAfterFirst} (${(l.median.maxInAnySecondAfterFirst / (l.name === 'portcullis-two-limits' ? SECOND.replenishRate : RATE)).toFixed(2)}x the binding rate) | ${l.median.limited} |`,
    ),
  ].join('\n');
}

// Redis's own CPU per rate-limit decision, for three ways of keeping the counts in one real
// redis-server (this machine's Debian build):
// - portcullis: our exact token bucket (lib/token-bucket/token-bucket.lua through RedisBucketStore),
//   at light load one take per script call, at saturation the takes of an event-loop turn batched
//   into one call (up to 128), and for reference at saturation with batching off;
// - a two-key bucket in the style of Spring Cloud Gateway's RequestRateLimiter (a tokens key and a
//   timestamp key, whole-second time from the client, SETEX both), one script call per take,
//   written here from that algorithm;
// - a fixed window in the style of envoy's ratelimit service: INCRBY and EXPIRE pipelined per
//   decision, no script.
// Each run resets Redis's statistics, makes DECISIONS decisions over USERS keys and reads back
// INFO cpu (user + sys of the Redis process) and INFO commandstats. Every approach runs ROUNDS
// times, the approaches taking turns (the order rotates each round), and each row is the round
// with the median CPU per decision: this shared machine's speed drifts within minutes, so a ratio
// of two runs far apart moves more than the approaches differ. Ratios between approaches are the
// median of the per-round ratios. Light load keeps one decision
// in flight; saturation keeps IN_FLIGHT in flight (ioredis pipelines what is not batched). The
// figures are Redis's, not the client's: the client shares the machine but not the measurement.
import { Redis } from 'ioredis';
import os from 'node:os';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';
import { startRedis } from '../test/harness/redis.ts';
import { commandStats, redisCpuUs } from './lib/redis-info.ts';
import { runClusterRows } from './redis-cost-cluster.ts';
import { approaches, IN_FLIGHT, RULE, USERS, type Approach } from './redis-cost-load.ts';
import type { BucketMemory, RedisCostBenchResult, RedisCostRow } from './redis-cost-report.ts';
import { runRedisInstructions } from './redis-instructions.ts';

const LIGHT_DECISIONS = Number(process.env['BENCH_REDIS_LIGHT'] ?? 20_000);
const SATURATED_DECISIONS = Number(process.env['BENCH_REDIS_SATURATED'] ?? 200_000);
const MEMORY_BUCKETS = 100_000;
const ROUNDS = Math.max(1, Number(process.env['BENCH_REDIS_ROUNDS'] ?? 5));

async function run(
  url: string,
  admin: Redis,
  approach: Approach,
  mode: 'light' | 'saturated',
  log: (line: string) => void,
): Promise<RedisCostRow> {
  const { decide, close } = await approach.open(url);
  const total = mode === 'light' ? LIGHT_DECISIONS : SATURATED_DECISIONS;
  const inFlight = mode === 'light' ? 1 : IN_FLIGHT;
  try {
    for (let i = 0; i < 200; i++) await decide(i % USERS); // scripts loaded, connections warm
    await admin.flushall();
    await admin.config('RESETSTAT');
    const cpuBefore = await redisCpuUs(admin);
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < total) await decide(next++ % USERS);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = (await redisCpuUs(admin)) - cpuBefore;
    const stats = await commandStats(admin);
    const perDecision = cpu / total;
    const row: RedisCostRow = {
      approach: approach.name,
      mode,
      calls: approach.calls,
      decisions: total,
      seconds: Math.round(seconds * 100) / 100,
      redisCpuUsPerDecision: Math.round(perDecision * 100) / 100,
      decisionsPerRedisCoreSecond: Math.round(1e6 / perDecision),
      commandUsPerDecision: Math.round((stats.usec / total) * 100) / 100,
      decisionsPerCall: Math.round((total / stats.topLevelCalls) * 100) / 100,
      commandCalls: stats.calls,
    };
    log(
      `  ${mode} ${approach.name}: ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s), ${row.commandUsPerDecision} µs in commands`,
    );
    return row;
  } finally {
    await close();
  }
}

/** One real bucket's memory: MEMORY USAGE, then used_memory over MEMORY_BUCKETS buckets made by the store. */
async function bucketMemory(url: string, admin: Redis): Promise<BucketMemory> {
  const store = new RedisBucketStore({ url, commandTimeoutMs: 5000 });
  await store.ready();
  try {
    await admin.flushall();
    // A user id of 36 characters (a UUID) on a route and rule with short names.
    const user = (i: number) => `all:api:${String(i).padStart(8, '0')}-0000-4000-8000-000000000000`;
    await takeOne(store, user(0), RULE);
    const key = store.keyOf(user(0));
    const memoryUsageBytes = Number(await admin.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
    await admin.flushall();
    const used = async () => Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1]);
    const before = await used();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < MEMORY_BUCKETS) await takeOne(store, user(next++), RULE);
      }),
    );
    const after = await used();
    return {
      memoryUsageBytes,
      buckets: MEMORY_BUCKETS,
      usedMemoryBytesPerBucket: Math.round((after - before) / MEMORY_BUCKETS),
      keyExample: key,
    };
  } finally {
    await store.close();
  }
}

export async function runRedisCostBench(
  log: (line: string) => void,
): Promise<RedisCostBenchResult> {
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  try {
    const version = /^redis_version:(\S+)/m.exec(await admin.info('server'))?.[1] ?? '?';
    const runs = (['light', 'saturated'] as const).flatMap((mode) =>
      approaches(mode).map((approach) => ({ mode, approach })),
    );
    /** Every round's row per approach, in round order. */
    const byRun = runs.map(() => [] as RedisCostRow[]);
    for (let round = 0; round < ROUNDS; round++) {
      log(`  round ${round + 1} of ${ROUNDS}`);
      for (let k = 0; k < runs.length; k++) {
        const i = (k + round) % runs.length;
        const { mode, approach } = runs[i] as (typeof runs)[number];
        (byRun[i] as RedisCostRow[]).push(await run(redis.url, admin, approach, mode, log));
      }
    }
    const rows: RedisCostRow[] = byRun.map((rounds) => {
      const cpu = rounds.map((r) => r.redisCpuUsPerDecision);
      const median = [...rounds].sort((a, b) => a.redisCpuUsPerDecision - b.redisCpuUsPerDecision)[
        Math.floor(rounds.length / 2)
      ] as RedisCostRow;
      return { ...median, cpuUsRange: [Math.min(...cpu), Math.max(...cpu)] };
    });
    /** The median over the rounds of a's CPU per decision over b's, and its range. */
    const ratio = (a: string, b: string, mode: 'light' | 'saturated') => {
      const ia = runs.findIndex((r) => r.mode === mode && r.approach.name === a);
      const ib = runs.findIndex((r) => r.mode === mode && r.approach.name === b);
      if (ia < 0 || ib < 0) return undefined;
      const each = (byRun[ia] as RedisCostRow[])
        .map(
          (x, round) =>
            x.redisCpuUsPerDecision /
            ((byRun[ib] as RedisCostRow[])[round] as RedisCostRow).redisCpuUsPerDecision,
        )
        .sort((x, y) => x - y);
      const r2 = (x: number) => Math.round(x * 100) / 100;
      return {
        median: r2(each[Math.floor(each.length / 2)] as number),
        low: r2(each[0] as number),
        high: r2(each[each.length - 1] as number),
      };
    };
    const memory = await bucketMemory(redis.url, admin);
    log(
      `  memory: ${memory.memoryUsageBytes} B MEMORY USAGE, ${memory.usedMemoryBytesPerBucket} B used_memory per bucket`,
    );
    const cluster = await runClusterRows(log);
    const instructions = await runRedisInstructions(log);
    const find = (mode: string, name: string) =>
      rows.find((r) => r.mode === mode && r.approach === name);
    const OURS = 'portcullis exact bucket';
    const WINDOW = 'fixed window (envoy ratelimit style)';
    const UNBATCHED = 'portcullis exact bucket, batching off';
    const ours = find('saturated', OURS);
    const window = find('saturated', WINDOW);
    const unbatched = find('saturated', UNBATCHED);
    const vsWindow = ratio(OURS, WINDOW, 'saturated');
    const vsUnbatched = ratio(UNBATCHED, OURS, 'saturated');
    const goals = [];
    if (ours !== undefined && window !== undefined && vsWindow !== undefined) {
      goals.push({
        goal: 'at saturation, our exact bucket costs Redis no more per decision than the fixed window',
        measured: `${ours.redisCpuUsPerDecision} vs ${window.redisCpuUsPerDecision} µs; per round ${vsWindow.median}x [${vsWindow.low}-${vsWindow.high}] over ${ROUNDS} rounds`,
        met: vsWindow.median <= 1,
      });
    }
    if (ours !== undefined && unbatched !== undefined && vsUnbatched !== undefined) {
      goals.push({
        goal: 'at saturation, at least 5x less than one script call per take',
        measured:
          `${vsUnbatched.median}x less per round [${vsUnbatched.low}-${vsUnbatched.high}] over ${ROUNDS} rounds (median rounds: ${ours.redisCpuUsPerDecision} vs ${unbatched.redisCpuUsPerDecision} µs)` +
          (instructions.ratios === undefined
            ? ''
            : `; in redis-server instructions ${instructions.ratios.refused}x less per refused take, ${instructions.ratios.admitted}x per admitted one`),
        met: vsUnbatched.median >= 5,
      });
    }
    return {
      suite: 'redis-cost',
      startedAt: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model ?? '?',
        node: process.version,
        redis: version,
        loadavgAtStart,
        loadavgAtEnd: os.loadavg(),
      },
      load: { users: USERS, inFlightAtSaturation: IN_FLIGHT, rule: RULE, rounds: ROUNDS },
      rows,
      cluster,
      memory,
      instructions,
      goals,
    };
  } finally {
    admin.disconnect();
    await redis.stop();
  }
}

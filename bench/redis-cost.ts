// Redis's own CPU per rate-limit decision (bench/README.md): the approaches of
// bench/redis-cost-load.ts at light load (one decision in flight) and at saturation (IN_FLIGHT),
// the exact bucket on a three-shard Cluster (bench/redis-cost-cluster.ts), redis-server's
// instructions per take (bench/redis-instructions.ts) and the memory of a bucket. Each run resets
// Redis's statistics and reads INFO cpu and commandstats: the figures are Redis's, not the
// client's. Every approach runs ROUNDS times, taking turns; a row is its round with the median CPU
// per decision, and ratios are medians of per-round ratios (the machine drifts within minutes).
import { Redis } from 'ioredis';
import os from 'node:os';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';
import { startRedis } from '../test/harness/redis.ts';
import { commandStats, machine, medianRound, r2, redisCpuUs, spread } from './lib/measure.ts';
import { interleave, perRound, pool } from './lib/suite.ts';
import { FEW_USERS, runClusterRows } from './redis-cost-cluster.ts';
import { approaches, IN_FLIGHT, RULE, USERS, type Approach } from './redis-cost-load.ts';
import { runRedisInstructions, type RedisInstructionsResult } from './redis-instructions.ts';

const LIGHT_DECISIONS = Number(process.env['BENCH_REDIS_LIGHT'] ?? 20_000);
const SATURATED_DECISIONS = Number(process.env['BENCH_REDIS_SATURATED'] ?? 200_000);
const MEMORY_BUCKETS = 100_000;
const ROUNDS = Math.max(1, Number(process.env['BENCH_REDIS_ROUNDS'] ?? 5));

type Mode = 'light' | 'saturated';

async function run(url: string, admin: Redis, approach: Approach, mode: Mode) {
  const { decide, close } = await approach.open(url);
  const total = mode === 'light' ? LIGHT_DECISIONS : SATURATED_DECISIONS;
  try {
    for (let i = 0; i < 200; i++) await decide(i % USERS); // scripts loaded, connections warm
    await admin.flushall();
    await admin.config('RESETSTAT');
    const cpuBefore = await redisCpuUs(admin);
    const started = performance.now();
    await pool(
      total,
      mode === 'light' ? 1 : IN_FLIGHT,
      async (i) => void (await decide(i % USERS)),
    );
    const seconds = (performance.now() - started) / 1000;
    const perDecision = ((await redisCpuUs(admin)) - cpuBefore) / total;
    const stats = await commandStats(admin);
    return {
      approach: approach.name,
      mode,
      calls: approach.calls,
      decisions: total,
      seconds: r2(seconds),
      redisCpuUsPerDecision: r2(perDecision),
      decisionsPerRedisCoreSecond: Math.round(1e6 / perDecision),
      /** INFO commandstats usec of the commands the client sent (a script's includes its inner calls), per decision. */
      commandUsPerDecision: r2(stats.usec / total),
      /** Decisions per command the client sent (script call, INCRBY or EXPIRE): a script's batch size. */
      decisionsPerCall: r2(total / stats.topLevelCalls),
      commandCalls: stats.calls,
    };
  } finally {
    await close();
  }
}

export type RedisCostRow = Awaited<ReturnType<typeof run>> & {
  /** Lowest and highest Redis CPU µs per decision over the rounds (the row is the median round). */
  readonly cpuUsRange?: readonly [number, number];
};

/** One real bucket's memory: MEMORY USAGE, then used_memory over MEMORY_BUCKETS buckets made by the store. */
async function bucketMemory(url: string, admin: Redis) {
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
    await pool(MEMORY_BUCKETS, IN_FLIGHT, (i) => takeOne(store, user(i), RULE));
    const after = await used();
    return {
      /** MEMORY USAGE (SAMPLES 0) of one bucket (a 16-byte string: micro-tokens and µs) with a TTL, bytes. */
      memoryUsageBytes,
      buckets: MEMORY_BUCKETS,
      /** used_memory after creating them minus before, per bucket, bytes (adds the key and expires dictionaries). */
      usedMemoryBytesPerBucket: Math.round((after - before) / MEMORY_BUCKETS),
      keyExample: key,
    };
  } finally {
    await store.close();
  }
}

export async function runRedisCostBench(log: (line: string) => void) {
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  try {
    const version = /^redis_version:(\S+)/m.exec(await admin.info('server'))?.[1] ?? '?';
    const runs = (['light', 'saturated'] as const).flatMap((mode) =>
      approaches(mode).map((approach) => ({ mode, approach })),
    );
    const byRun = await interleave(runs, ROUNDS, async ({ mode, approach }, round) => {
      const row = await run(redis.url, admin, approach, mode);
      log(
        `  round ${round}, ${mode} ${approach.name}: ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s), ${row.commandUsPerDecision} µs in commands`,
      );
      return row;
    });
    const rows: RedisCostRow[] = byRun.map((rounds) => {
      const cpu = rounds.map((r) => r.redisCpuUsPerDecision);
      const median = medianRound(rounds, (r) => r.redisCpuUsPerDecision) as RedisCostRow;
      return { ...median, cpuUsRange: [Math.min(...cpu), Math.max(...cpu)] };
    });
    /** The median over the rounds of a's CPU per decision over b's, and its range. */
    const ratio = (a: string, b: string) => {
      const at = (name: string) =>
        byRun[runs.findIndex((r) => r.mode === 'saturated' && r.approach.name === name)];
      const [ra, rb] = [at(a), at(b)];
      if (ra === undefined || rb === undefined) return undefined;
      return spread(perRound(ra, rb, (x, y) => x.redisCpuUsPerDecision / y.redisCpuUsPerDecision));
    };
    const memory = await bucketMemory(redis.url, admin);
    log(
      `  memory: ${memory.memoryUsageBytes} B MEMORY USAGE, ${memory.usedMemoryBytesPerBucket} B used_memory per bucket`,
    );
    const cluster = await runClusterRows(log);
    const instructions = await runRedisInstructions(log);
    const find = (name: string) => rows.find((r) => r.mode === 'saturated' && r.approach === name);
    const OURS = 'portcullis exact bucket';
    const WINDOW = 'fixed window (envoy ratelimit style)';
    const UNBATCHED = 'portcullis exact bucket, batching off';
    const [ours, window, unbatched] = [find(OURS), find(WINDOW), find(UNBATCHED)];
    const vsWindow = ratio(OURS, WINDOW);
    const vsUnbatched = ratio(UNBATCHED, OURS);
    const goals = [];
    if (ours !== undefined && window !== undefined && vsWindow !== undefined)
      goals.push({
        goal: 'at saturation, our exact bucket costs Redis no more per decision than the fixed window',
        measured: `${ours.redisCpuUsPerDecision} vs ${window.redisCpuUsPerDecision} µs; per round ${vsWindow.median}x [${vsWindow.low}-${vsWindow.high}] over ${ROUNDS} rounds`,
        met: vsWindow.median <= 1,
      });
    if (ours !== undefined && unbatched !== undefined && vsUnbatched !== undefined)
      goals.push({
        goal: 'at saturation, at least 5x less than one script call per take',
        measured:
          `${vsUnbatched.median}x less per round [${vsUnbatched.low}-${vsUnbatched.high}] over ${ROUNDS} rounds (median rounds: ${ours.redisCpuUsPerDecision} vs ${unbatched.redisCpuUsPerDecision} µs)` +
          (instructions.ratios === undefined
            ? ''
            : `; in redis-server instructions ${instructions.ratios.refused}x less per refused take, ${instructions.ratios.admitted}x per admitted one`),
        met: vsUnbatched.median >= 5,
      });
    return {
      suite: 'redis-cost' as const,
      startedAt: new Date().toISOString(),
      machine: { ...machine(loadavgAtStart), redis: version },
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

type RedisCostBenchResult = Awaited<ReturnType<typeof runRedisCostBench>>;

export function redisCostMarkdown(r: RedisCostBenchResult): string {
  return [
    '### Redis CPU per rate-limit decision',
    '',
    `One redis-server ${r.machine.redis}, ${r.load.users} users, rule ${r.load.rule.replenishRate}/s burst ${r.load.rule.burstCapacity}; light load: one decision in flight; saturation: ${r.load.inFlightAtSaturation} in flight. Redis CPU is the process's user + sys time over the run (INFO cpu), which includes reading requests and writing replies; command time is INFO commandstats of the commands sent (scripts with their inner calls). ${r.machine.cpus} CPUs (${r.machine.model}).`,
    '',
    `Each approach ran ${r.load.rounds ?? 1} rounds, taking turns with the others; a row is its median round, with the range over the rounds.`,
    '',
    '| load | approach | Redis calls | decisions | decisions per command | Redis CPU µs/decision [range] | decisions per Redis core-second | µs in commands/decision |',
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...r.rows.map(
      (x) =>
        `| ${x.mode} | ${x.approach} | ${x.calls} | ${x.decisions} | ${x.decisionsPerCall} | ${x.redisCpuUsPerDecision}${x.cpuUsRange === undefined ? '' : ` [${x.cpuUsRange[0]}-${x.cpuUsRange[1]}]`} | ${x.decisionsPerRedisCoreSecond} | ${x.commandUsPerDecision} |`,
    ),
    '',
    ...r.goals.map((g) => `- ${g.goal}: ${g.measured} — ${g.met ? 'met' : '**not met**'}`),
    '',
    '#### The exact bucket on a three-shard Redis Cluster',
    '',
    `Three redis-server masters (no replicas) on this machine, saturation: ${r.load.inFlightAtSaturation} takes in flight from one client, ${r.cluster[0]?.decisions ?? 0} decisions per run. Redis CPU is the sum of the shards' user + sys time over the run; per shard it is that shard's CPU over the takes it decided (the takes of the users whose slots it serves); µs per script call is INFO commandstats usec_per_call of EVALSHA. ${FEW_USERS} users stand for a layout with ${FEW_USERS} hash tags per route: a turn's takes then share slots.`,
    '',
    '| approach | users | takes per script call | Redis CPU µs/decision (all shards) | takes per second per Redis core | per shard: decisions, script calls, CPU µs/decision, µs per script call |',
    '|---|---:|---:|---:|---:|---|',
    ...r.cluster.map(
      (x) =>
        `| ${x.approach} | ${x.users} | ${x.decisionsPerCall} | ${x.redisCpuUsPerDecision} | ${x.decisionsPerRedisCoreSecond} | ${x.shards.map((s) => `${s.decisions}, ${s.scriptCalls}, ${s.redisCpuUsPerDecision}, ${s.usecPerScriptCall}`).join('; ')} |`,
    ),
    '',
    '#### Instructions inside redis-server per decision',
    '',
    ...instructionsMarkdown(r.instructions),
    '',
    '#### Memory per bucket',
    '',
    `One bucket (a 16-byte string: micro-tokens and µs) with its TTL, key \`${r.memory.keyExample}\` (a 36-character user id): MEMORY USAGE ${r.memory.memoryUsageBytes} bytes; used_memory grew by ${r.memory.usedMemoryBytesPerBucket} bytes per bucket over ${r.memory.buckets} buckets (key, value, TTL entry and the dictionaries' share).`,
  ].join('\n');
}

function instructionsMarkdown(r: RedisInstructionsResult | undefined): string[] {
  if (r === undefined) return ['Not measured in this run.'];
  if (r.notRun !== undefined) return [`**Not run on this machine**: ${r.notRun}.`];
  const per = (decisions: string, calls: string) =>
    r.rows.find((x) => x.decisions === decisions && x.calls === calls)?.instructionsPerTake ?? '-';
  return [
    `Our script's takes under callgrind (${r.valgrind}): every instruction of the redis-server process (reading the request, the script and its inner commands, writing the reply) per take, the same decisions in every run (time passed to the script), ${r.rows[0]?.takes ?? 0} takes per figure, 1,000 users. Repeats within 0.2 %, where the CPU figures above move by more than 1.5x from round to round.`,
    '',
    '| take | batched (128 per script call) | one script call per take (pipelined) | batched costs less by |',
    '|---|---:|---:|---:|',
    `| refused (drained bucket: the read only) | ${per('refused', 'batched')} | ${per('refused', 'single')} | ${r.ratios?.refused ?? '-'}x |`,
    `| admitted (the read and a SET with its TTL) | ${per('admitted', 'batched')} | ${per('admitted', 'single')} | ${r.ratios?.admitted ?? '-'}x |`,
  ];
}

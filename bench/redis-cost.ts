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
import type { BucketRule } from '../lib/token-bucket/bucket.ts';
import { keySlot } from '../lib/token-bucket/key-slot.ts';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { startRedis, startRedisCluster } from '../test/harness/redis.ts';
import { commandStats, redisCpuUs } from './lib/redis-info.ts';
import { runRedisInstructions, type RedisInstructionsResult } from './redis-instructions.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';

const LIGHT_DECISIONS = Number(process.env['BENCH_REDIS_LIGHT'] ?? 20_000);
const SATURATED_DECISIONS = Number(process.env['BENCH_REDIS_SATURATED'] ?? 200_000);
const IN_FLIGHT = 256;
const USERS = 1000;
const CLUSTER_DECISIONS = Number(process.env['BENCH_REDIS_CLUSTER'] ?? 200_000);
/** Few users: a turn's takes fall into few slots, as with a hash tag per (route, one of 16 user shards). */
const FEW_USERS = 16;
const MEMORY_BUCKETS = 100_000;
const RULE: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };
const ROUNDS = Math.max(1, Number(process.env['BENCH_REDIS_ROUNDS'] ?? 5));

/** Two keys per bucket, whole seconds from the caller: the shape of Spring Cloud Gateway's limiter. */
const TWO_KEY_BUCKET = `
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local requested = tonumber(ARGV[4])
local ttl = math.floor(capacity / rate * 2)
local tokens = tonumber(redis.call('GET', KEYS[1])) or capacity
local refreshed = tonumber(redis.call('GET', KEYS[2])) or 0
local filled = math.min(capacity, tokens + math.max(0, now - refreshed) * rate)
local allowed = filled >= requested
if allowed then filled = filled - requested end
if ttl > 0 then
  redis.call('SETEX', KEYS[1], ttl, filled)
  redis.call('SETEX', KEYS[2], ttl, now)
end
return { allowed and 1 or 0, filled }
`;

interface Approach {
  readonly name: string;
  readonly calls: string;
  /** Returns one decision function bound to a connection (or store) of its own. */
  open(url: string): Promise<{ decide: (user: number) => Promise<unknown>; close: () => Promise<void> }>;
}

const approaches = (mode: 'light' | 'saturated'): Approach[] => [
  {
    name: 'portcullis exact bucket',
    calls: mode === 'light' ? 'one script call per take' : 'takes of a turn batched into one script call',
    async open(url) {
      const store = new RedisBucketStore({ url, keyPrefix: 'pc:', commandTimeoutMs: 5000 });
      await store.ready();
      return { decide: (user) => takeOne(store, `u${user}`, RULE), close: () => store.close() };
    },
  },
  ...(mode === 'saturated'
    ? [
        {
          name: 'portcullis exact bucket, batching off',
          calls: 'one script call per take (pipelined)',
          async open(url: string) {
            const store = new RedisBucketStore({ url, keyPrefix: 'pc1:', commandTimeoutMs: 5000, maxBatch: 1 });
            await store.ready();
            return { decide: (user: number) => takeOne(store, `u${user}`, RULE), close: () => store.close() };
          },
        },
      ]
    : []),
  {
    name: 'two-key bucket (Spring Cloud Gateway style)',
    calls: 'one script call per take',
    async open(url) {
      const redis = new Redis(url, { enableAutoPipelining: true });
      redis.defineCommand('twoKeyTake', { numberOfKeys: 2, lua: TWO_KEY_BUCKET });
      const take = (redis as unknown as { twoKeyTake: (...a: (string | number)[]) => Promise<unknown> }).twoKeyTake.bind(redis);
      return {
        decide: (user) => take(`scg.{u${user}}.tokens`, `scg.{u${user}}.timestamp`, RULE.replenishRate, RULE.burstCapacity, Math.floor(Date.now() / 1000), RULE.requestedTokens),
        close: async () => void redis.disconnect(),
      };
    },
  },
  {
    name: 'fixed window (envoy ratelimit style)',
    calls: 'INCRBY + EXPIRE pipelined per decision',
    async open(url) {
      const redis = new Redis(url, { enableAutoPipelining: true });
      return {
        decide: (user) => {
          const window = Math.floor(Date.now() / 1000);
          const key = `fw_u${user}_${window}`;
          return redis.pipeline().incrby(key, 1).expire(key, 2).exec();
        },
        close: async () => void redis.disconnect(),
      };
    },
  },
];

export interface RedisCostRow {
  readonly approach: string;
  readonly mode: 'light' | 'saturated';
  readonly calls: string;
  readonly decisions: number;
  readonly seconds: number;
  /** Redis process CPU (user + sys) per decision, µs. */
  readonly redisCpuUsPerDecision: number;
  /** Decisions one fully busy Redis core would make at this cost. */
  readonly decisionsPerRedisCoreSecond: number;
  /** INFO commandstats usec of the commands the client sent (a script's includes its inner calls), per decision. */
  readonly commandUsPerDecision: number;
  /** Decisions per command the client sent (script call, INCRBY or EXPIRE): a script's batch size. */
  readonly decisionsPerCall: number;
  readonly commandCalls: Record<string, number>;
  /** Lowest and highest Redis CPU µs per decision over the rounds (the row is the median round). */
  readonly cpuUsRange?: readonly [number, number];
}

export interface ClusterShardCost {
  readonly shard: number;
  /** Takes this shard decided (its users' takes: the slot of each user's key, from CLUSTER SLOTS). */
  readonly decisions: number;
  readonly scriptCalls: number;
  /** Redis process CPU (user + sys) over the run, per decision it made, µs. */
  readonly redisCpuUsPerDecision: number;
  /** INFO commandstats usec_per_call of EVALSHA: one script call, with its inner calls. */
  readonly usecPerScriptCall: number;
}

export interface ClusterCostRow {
  readonly approach: string;
  readonly users: number;
  readonly decisions: number;
  readonly seconds: number;
  readonly decisionsPerCall: number;
  /** All shards' CPU over the run per decision, µs. */
  readonly redisCpuUsPerDecision: number;
  /** Takes per second one fully busy Redis core makes at this cost (decisions / CPU seconds of all shards). */
  readonly decisionsPerRedisCoreSecond: number;
  readonly shards: ClusterShardCost[];
}

export interface BucketMemory {
  /** MEMORY USAGE (SAMPLES 0) of one bucket (a 16-byte string: micro-tokens and µs) with a TTL, bytes. */
  readonly memoryUsageBytes: number;
  /** Buckets created for the used_memory measurement. */
  readonly buckets: number;
  /** used_memory after creating them minus before, per bucket, bytes (adds the key and expires dictionaries). */
  readonly usedMemoryBytesPerBucket: number;
  readonly keyExample: string;
}

export interface RedisCostBenchResult {
  readonly suite: 'redis-cost';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; redis: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly load: { users: number; inFlightAtSaturation: number; rule: BucketRule; rounds?: number };
  readonly rows: RedisCostRow[];
  readonly cluster: ClusterCostRow[];
  readonly memory: BucketMemory;
  /** Instructions inside redis-server per take under callgrind (bench/redis-instructions.ts). */
  readonly instructions?: RedisInstructionsResult;
  readonly goals: { goal: string; measured: string; met: boolean }[];
}

async function run(url: string, admin: Redis, approach: Approach, mode: 'light' | 'saturated', log: (line: string) => void): Promise<RedisCostRow> {
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
    log(`  ${mode} ${approach.name}: ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s), ${row.commandUsPerDecision} µs in commands`);
    return row;
  } finally {
    await close();
  }
}

async function shardStats(node: Redis): Promise<{ cpuUs: number; evalsha: number; evalshaUsec: number }> {
  const stats = await node.info('commandstats');
  const evalsha = /calls=(\d+),usec=(\d+)/.exec(/^cmdstat_evalsha:.*$/m.exec(stats)?.[0] ?? '');
  return { cpuUs: await redisCpuUs(node), evalsha: Number(evalsha?.[1] ?? 0), evalshaUsec: Number(evalsha?.[2] ?? 0) };
}

/** The index in `shards` of the shard holding each user's bucket, from CLUSTER SLOTS. */
async function shardOfUsers(shards: Redis[], store: RedisBucketStore, users: number): Promise<number[]> {
  const ranges = (await (shards[0] as Redis).call('CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]]][];
  const ports = shards.map((s) => s.options.port);
  return Array.from({ length: users }, (_, user) => {
    const slot = keySlot(store.keyOf(`u${user}`));
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    const shard = ports.indexOf(range?.[2][1]);
    if (shard < 0) throw new Error(`no shard of this cluster serves slot ${slot}`);
    return shard;
  });
}

async function runCluster(seeds: { host: string; port: number }[], shards: Redis[], approach: string, users: number, maxBatch: number, log: (line: string) => void): Promise<ClusterCostRow> {
  const store = new RedisBucketStore({ cluster: { nodes: seeds }, keyPrefix: `pcc${maxBatch}:`, commandTimeoutMs: 5000, maxBatch });
  await store.ready();
  try {
    for (let i = 0; i < 600; i++) await takeOne(store, `u${i % users}`, RULE); // the script loaded on every shard
    const shardOf = await shardOfUsers(shards, store, users);
    const decided = shards.map(() => 0);
    for (const node of shards) {
      await node.flushall();
      await node.config('RESETSTAT');
    }
    const before = await Promise.all(shards.map(shardStats));
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < CLUSTER_DECISIONS) {
          const user = next++ % users;
          (decided[shardOf[user] as number] as number)++;
          await takeOne(store, `u${user}`, RULE);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const after = await Promise.all(shards.map(shardStats));
    const perShard = after.map((a, i): ClusterShardCost => {
      const b = before[i] as typeof a;
      const decisions = decided[i] as number;
      const calls = a.evalsha - b.evalsha;
      return {
        shard: i,
        decisions,
        scriptCalls: calls,
        redisCpuUsPerDecision: decisions === 0 ? 0 : Math.round(((a.cpuUs - b.cpuUs) / decisions) * 100) / 100,
        usecPerScriptCall: calls === 0 ? 0 : Math.round(((a.evalshaUsec - b.evalshaUsec) / calls) * 100) / 100,
      };
    });
    const cpuUs = after.reduce((sum, a, i) => sum + a.cpuUs - (before[i] as typeof a).cpuUs, 0);
    const calls = perShard.reduce((sum, x) => sum + x.scriptCalls, 0);
    const row: ClusterCostRow = {
      approach,
      users,
      decisions: CLUSTER_DECISIONS,
      seconds: Math.round(seconds * 100) / 100,
      decisionsPerCall: Math.round((CLUSTER_DECISIONS / calls) * 100) / 100,
      redisCpuUsPerDecision: Math.round((cpuUs / CLUSTER_DECISIONS) * 100) / 100,
      decisionsPerRedisCoreSecond: Math.round(CLUSTER_DECISIONS / (cpuUs / 1e6)),
      shards: perShard,
    };
    log(`  cluster ${approach}, ${users} users: ${row.decisionsPerCall} takes/call, ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s)`);
    return row;
  } finally {
    await store.close();
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
    return { memoryUsageBytes, buckets: MEMORY_BUCKETS, usedMemoryBytesPerBucket: Math.round((after - before) / MEMORY_BUCKETS), keyExample: key };
  } finally {
    await store.close();
  }
}

async function runClusterRows(log: (line: string) => void): Promise<ClusterCostRow[]> {
  const cluster = await startRedisCluster(3);
  const shards = cluster.nodes.map((n) => new Redis(n.url));
  try {
    return [
      await runCluster(cluster.seeds, shards, 'takes of a turn batched per slot', USERS, 128, log),
      await runCluster(cluster.seeds, shards, 'one script call per take', USERS, 1, log),
      await runCluster(cluster.seeds, shards, 'takes of a turn batched per slot', FEW_USERS, 128, log),
      await runCluster(cluster.seeds, shards, 'one script call per take', FEW_USERS, 1, log),
    ];
  } finally {
    for (const s of shards) s.disconnect();
    await cluster.stop();
  }
}

export async function runRedisCostBench(log: (line: string) => void): Promise<RedisCostBenchResult> {
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  try {
    const version = /^redis_version:(\S+)/m.exec(await admin.info('server'))?.[1] ?? '?';
    const runs = (['light', 'saturated'] as const).flatMap((mode) => approaches(mode).map((approach) => ({ mode, approach })));
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
      const median = [...rounds].sort((a, b) => a.redisCpuUsPerDecision - b.redisCpuUsPerDecision)[Math.floor(rounds.length / 2)] as RedisCostRow;
      return { ...median, cpuUsRange: [Math.min(...cpu), Math.max(...cpu)] };
    });
    /** The median over the rounds of a's CPU per decision over b's, and its range. */
    const ratio = (a: string, b: string, mode: 'light' | 'saturated') => {
      const ia = runs.findIndex((r) => r.mode === mode && r.approach.name === a);
      const ib = runs.findIndex((r) => r.mode === mode && r.approach.name === b);
      if (ia < 0 || ib < 0) return undefined;
      const each = (byRun[ia] as RedisCostRow[]).map((x, round) => x.redisCpuUsPerDecision / ((byRun[ib] as RedisCostRow[])[round] as RedisCostRow).redisCpuUsPerDecision).sort((x, y) => x - y);
      const r2 = (x: number) => Math.round(x * 100) / 100;
      return { median: r2(each[Math.floor(each.length / 2)] as number), low: r2(each[0] as number), high: r2(each[each.length - 1] as number) };
    };
    const memory = await bucketMemory(redis.url, admin);
    log(`  memory: ${memory.memoryUsageBytes} B MEMORY USAGE, ${memory.usedMemoryBytesPerBucket} B used_memory per bucket`);
    const cluster = await runClusterRows(log);
    const instructions = await runRedisInstructions(log);
    const find = (mode: string, name: string) => rows.find((r) => r.mode === mode && r.approach === name);
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
          (instructions.ratios === undefined ? '' : `; in redis-server instructions ${instructions.ratios.refused}x less per refused take, ${instructions.ratios.admitted}x per admitted one`),
        met: vsUnbatched.median >= 5,
      });
    }
    return {
      suite: 'redis-cost',
      startedAt: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '?', node: process.version, redis: version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
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
    ...r.rows.map((x) => `| ${x.mode} | ${x.approach} | ${x.calls} | ${x.decisions} | ${x.decisionsPerCall} | ${x.redisCpuUsPerDecision}${x.cpuUsRange === undefined ? '' : ` [${x.cpuUsRange[0]}-${x.cpuUsRange[1]}]`} | ${x.decisionsPerRedisCoreSecond} | ${x.commandUsPerDecision} |`),
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
  const per = (decisions: string, calls: string) => r.rows.find((x) => x.decisions === decisions && x.calls === calls)?.instructionsPerTake ?? '-';
  return [
    `Our script's takes under callgrind (${r.valgrind}): every instruction of the redis-server process (reading the request, the script and its inner commands, writing the reply) per take, the same decisions in every run (time passed to the script), ${r.rows[0]?.takes ?? 0} takes per figure, 1,000 users. Repeats within 0.2 %, where the CPU figures above move by more than 1.5x from round to round.`,
    '',
    '| take | batched (128 per script call) | one script call per take (pipelined) | batched costs less by |',
    '|---|---:|---:|---:|',
    `| refused (drained bucket: the read only) | ${per('refused', 'batched')} | ${per('refused', 'single')} | ${r.ratios?.refused ?? '-'}x |`,
    `| admitted (the read and a SET with its TTL) | ${per('admitted', 'batched')} | ${per('admitted', 'single')} | ${r.ratios?.admitted ?? '-'}x |`,
  ];
}

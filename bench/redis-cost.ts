// Redis's own CPU per rate-limit decision, for three ways of keeping the counts in one real
// redis-server (this machine's Debian build):
// - portcullis: our exact token bucket (sidecar/stores/token-bucket.lua through RedisBucketStore),
//   at light load one take per script call, at saturation the takes of an event-loop turn batched
//   into one call (up to 128), and for reference at saturation with batching off;
// - a two-key bucket in the style of Spring Cloud Gateway's RequestRateLimiter (a tokens key and a
//   timestamp key, whole-second time from the client, SETEX both), one script call per take,
//   written here from that algorithm;
// - a fixed window in the style of envoy's ratelimit service: INCRBY and EXPIRE pipelined per
//   decision, no script.
// Each run resets Redis's statistics, makes DECISIONS decisions over USERS keys and reads back
// INFO cpu (user + sys of the Redis process) and INFO commandstats. Light load keeps one decision
// in flight; saturation keeps IN_FLIGHT in flight (ioredis pipelines what is not batched). The
// figures are Redis's, not the client's: the client shares the machine but not the measurement.
import { Redis } from 'ioredis';
import os from 'node:os';
import type { BucketRule } from '../sidecar/bucket.ts';
import { RedisBucketStore } from '../sidecar/stores/redis.ts';
import { startRedis } from '../test/harness/redis.ts';

const LIGHT_DECISIONS = Number(process.env['BENCH_REDIS_LIGHT'] ?? 20_000);
const SATURATED_DECISIONS = Number(process.env['BENCH_REDIS_SATURATED'] ?? 200_000);
const IN_FLIGHT = 256;
const USERS = 1000;
const RULE: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };

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
      return { decide: (user) => store.take(`u${user}`, RULE), close: () => store.close() };
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
            return { decide: (user: number) => store.take(`u${user}`, RULE), close: () => store.close() };
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
}

export interface RedisCostBenchResult {
  readonly suite: 'redis-cost';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; redis: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly load: { users: number; inFlightAtSaturation: number; rule: BucketRule };
  readonly rows: RedisCostRow[];
  readonly goals: { goal: string; measured: string; met: boolean }[];
}

async function redisCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Commands a client sends; the commands a script runs inside are counted by Redis as well, under their own names, and are left out here. */
const TOP_LEVEL = new Set(['evalsha', 'eval', 'incrby', 'expire']);

async function commandStats(admin: Redis): Promise<{ usec: number; topLevelCalls: number; calls: Record<string, number> }> {
  let usec = 0;
  let topLevelCalls = 0;
  const calls: Record<string, number> = {};
  for (const m of (await admin.info('commandstats')).matchAll(/^cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/gm)) {
    const name = m[1] ?? '';
    if (['info', 'config', 'ping', 'client', 'hello', 'script', 'select', 'flushall'].includes(name.split('|')[0] ?? '')) continue;
    calls[name] = Number(m[2]);
    if (TOP_LEVEL.has(name)) {
      topLevelCalls += Number(m[2]);
      usec += Number(m[3]);
    }
  }
  return { usec, topLevelCalls, calls };
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

export async function runRedisCostBench(log: (line: string) => void): Promise<RedisCostBenchResult> {
  const loadavgAtStart = os.loadavg();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  try {
    const version = /^redis_version:(\S+)/m.exec(await admin.info('server'))?.[1] ?? '?';
    const rows: RedisCostRow[] = [];
    for (const mode of ['light', 'saturated'] as const) for (const approach of approaches(mode)) rows.push(await run(redis.url, admin, approach, mode, log));
    const find = (mode: string, name: string) => rows.find((r) => r.mode === mode && r.approach === name);
    const ours = find('saturated', 'portcullis exact bucket');
    const window = find('saturated', 'fixed window (envoy ratelimit style)');
    const unbatched = find('saturated', 'portcullis exact bucket, batching off');
    const goals = [];
    if (ours !== undefined && window !== undefined) {
      goals.push({
        goal: 'at saturation, our exact bucket costs Redis no more per decision than the fixed window',
        measured: `${ours.redisCpuUsPerDecision} vs ${window.redisCpuUsPerDecision} µs (${Math.round((ours.redisCpuUsPerDecision / window.redisCpuUsPerDecision) * 100) / 100}x)`,
        met: ours.redisCpuUsPerDecision <= window.redisCpuUsPerDecision,
      });
    }
    if (ours !== undefined && unbatched !== undefined) {
      const factor = Math.round((unbatched.redisCpuUsPerDecision / ours.redisCpuUsPerDecision) * 10) / 10;
      goals.push({ goal: 'at saturation, at least 5x less than one script call per take', measured: `${factor}x less (${ours.redisCpuUsPerDecision} vs ${unbatched.redisCpuUsPerDecision} µs)`, met: factor >= 5 });
    }
    return {
      suite: 'redis-cost',
      startedAt: new Date().toISOString(),
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '?', node: process.version, redis: version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
      load: { users: USERS, inFlightAtSaturation: IN_FLIGHT, rule: RULE },
      rows,
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
    '| load | approach | Redis calls | decisions | decisions per command | Redis CPU µs/decision | decisions per Redis core-second | µs in commands/decision |',
    '|---|---|---|---:|---:|---:|---:|---:|',
    ...r.rows.map((x) => `| ${x.mode} | ${x.approach} | ${x.calls} | ${x.decisions} | ${x.decisionsPerCall} | ${x.redisCpuUsPerDecision} | ${x.decisionsPerRedisCoreSecond} | ${x.commandUsPerDecision} |`),
    '',
    ...r.goals.map((g) => `- ${g.goal}: ${g.measured} — ${g.met ? 'met' : '**not met**'}`),
  ].join('\n');
}

// The redis-cost suite's result and its Markdown (bench/results/redis-cost.md).
import type { BucketRule } from '../lib/token-bucket/bucket.ts';
import { FEW_USERS } from './redis-cost-cluster.ts';
import type { RedisInstructionsResult } from './redis-instructions.ts';

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
  readonly machine: {
    cpus: number;
    model: string;
    node: string;
    redis: string;
    loadavgAtStart: number[];
    loadavgAtEnd: number[];
  };
  readonly load: { users: number; inFlightAtSaturation: number; rule: BucketRule; rounds?: number };
  readonly rows: RedisCostRow[];
  readonly cluster: ClusterCostRow[];
  readonly memory: BucketMemory;
  /** Instructions inside redis-server per take under callgrind (bench/redis-instructions.ts). */
  readonly instructions?: RedisInstructionsResult;
  readonly goals: { goal: string; measured: string; met: boolean }[];
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

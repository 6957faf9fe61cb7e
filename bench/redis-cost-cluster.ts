// The exact bucket on a three-shard Redis Cluster, for the redis-cost suite: Redis CPU per
// decision over all shards and per shard, with the takes of a turn batched per slot or not.
import { Redis } from 'ioredis';
import { keySlot } from '../lib/token-bucket/key-slot.ts';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';
import { startRedisCluster } from '../test/harness/redis.ts';
import { commandStats, r2, redisCpuUs } from './lib/measure.ts';
import { pool } from './lib/suite.ts';
import { IN_FLIGHT, RULE, USERS } from './redis-cost-load.ts';

const CLUSTER_DECISIONS = Number(process.env['BENCH_REDIS_CLUSTER'] ?? 200_000);
/** Few users: a turn's takes fall into few slots, as with a hash tag per (route, one of 16 user shards). */
export const FEW_USERS = 16;

/** A shard's CPU so far, and its script calls (EVALSHA: the store's only command) and their usec. */
const shardStats = async (node: Redis) => ({
  cpuUs: await redisCpuUs(node),
  ...(await commandStats(node)),
});

/** The index in `shards` of the shard holding each user's bucket, from CLUSTER SLOTS. */
async function shardOfUsers(shards: Redis[], store: RedisBucketStore, users: number) {
  type Range = [from: number, to: number, master: [host: string, port: number]];
  const ranges = (await (shards[0] as Redis).call('CLUSTER', 'SLOTS')) as Range[];
  const ports = shards.map((s) => s.options.port);
  return Array.from({ length: users }, (_, user) => {
    const slot = keySlot(store.keyOf(`u${user}`));
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    const shard = ports.indexOf(range?.[2][1]);
    if (shard < 0) throw new Error(`no shard of this cluster serves slot ${slot}`);
    return shard;
  });
}

type Cluster = Awaited<ReturnType<typeof startRedisCluster>>;

async function runCluster(cluster: Cluster, shards: Redis[], users: number, maxBatch: number) {
  const store = new RedisBucketStore({
    cluster: { nodes: cluster.seeds },
    keyPrefix: `pcc${maxBatch}:`,
    commandTimeoutMs: 5000,
    maxBatch,
  });
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
    await pool(CLUSTER_DECISIONS, IN_FLIGHT, async (i) => {
      const user = i % users;
      (decided[shardOf[user] as number] as number)++;
      await takeOne(store, `u${user}`, RULE);
    });
    const seconds = (performance.now() - started) / 1000;
    const after = await Promise.all(shards.map(shardStats));
    const perShard = after.map((a, i) => {
      const b = before[i] as typeof a;
      const decisions = decided[i] as number;
      const calls = a.topLevelCalls - b.topLevelCalls;
      return {
        shard: i,
        /** Takes this shard decided (its users' takes: the slot of each user's key, from CLUSTER SLOTS). */
        decisions,
        scriptCalls: calls,
        /** Redis process CPU (user + sys) over the run, per decision it made, µs. */
        redisCpuUsPerDecision: decisions === 0 ? 0 : r2((a.cpuUs - b.cpuUs) / decisions),
        /** INFO commandstats usec_per_call of EVALSHA: one script call, with its inner calls. */
        usecPerScriptCall: calls === 0 ? 0 : r2((a.usec - b.usec) / calls),
      };
    });
    const cpuUs = after.reduce((sum, a, i) => sum + a.cpuUs - (before[i] as typeof a).cpuUs, 0);
    const calls = perShard.reduce((sum, x) => sum + x.scriptCalls, 0);
    return {
      approach: maxBatch === 1 ? 'one script call per take' : 'takes of a turn batched per slot',
      users,
      decisions: CLUSTER_DECISIONS,
      seconds: r2(seconds),
      decisionsPerCall: r2(CLUSTER_DECISIONS / calls),
      redisCpuUsPerDecision: r2(cpuUs / CLUSTER_DECISIONS),
      decisionsPerRedisCoreSecond: Math.round(CLUSTER_DECISIONS / (cpuUs / 1e6)),
      shards: perShard,
    };
  } finally {
    await store.close();
  }
}

export type ClusterCostRow = Awaited<ReturnType<typeof runCluster>>;

/** The takes of a turn batched per slot (up to 128 a call) and one script call per take, for USERS and FEW_USERS. */
export async function runClusterRows(log: (line: string) => void) {
  const cluster = await startRedisCluster(3);
  const shards = cluster.nodes.map((n) => new Redis(n.url));
  const rows: ClusterCostRow[] = [];
  try {
    for (const users of [USERS, FEW_USERS])
      for (const maxBatch of [128, 1]) {
        const row = await runCluster(cluster, shards, users, maxBatch);
        log(
          `  cluster ${row.approach}, ${users} users: ${row.decisionsPerCall} takes/call, ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s)`,
        );
        rows.push(row);
      }
    return rows;
  } finally {
    for (const s of shards) s.disconnect();
    await cluster.stop();
  }
}

// The exact bucket on a three-shard Redis Cluster, for the redis-cost suite: Redis CPU per
// decision over all shards and per shard, with the takes of a turn batched per slot or not.
import { Redis } from 'ioredis';
import { keySlot } from '../lib/token-bucket/key-slot.ts';
import { RedisBucketStore } from '../lib/token-bucket/redis-store.ts';
import { takeOne } from '../lib/token-bucket/take-promise.ts';
import { startRedisCluster } from '../test/harness/redis.ts';
import { redisCpuUs } from './lib/redis-info.ts';
import type { ClusterCostRow, ClusterShardCost } from './redis-cost-report.ts';
import { IN_FLIGHT, RULE, USERS } from './redis-cost-load.ts';

const CLUSTER_DECISIONS = Number(process.env['BENCH_REDIS_CLUSTER'] ?? 200_000);
/** Few users: a turn's takes fall into few slots, as with a hash tag per (route, one of 16 user shards). */
export const FEW_USERS = 16;

async function shardStats(
  node: Redis,
): Promise<{ cpuUs: number; evalsha: number; evalshaUsec: number }> {
  const stats = await node.info('commandstats');
  const evalsha = /calls=(\d+),usec=(\d+)/.exec(/^cmdstat_evalsha:.*$/m.exec(stats)?.[0] ?? '');
  return {
    cpuUs: await redisCpuUs(node),
    evalsha: Number(evalsha?.[1] ?? 0),
    evalshaUsec: Number(evalsha?.[2] ?? 0),
  };
}

/** The index in `shards` of the shard holding each user's bucket, from CLUSTER SLOTS. */
async function shardOfUsers(
  shards: Redis[],
  store: RedisBucketStore,
  users: number,
): Promise<number[]> {
  const ranges = (await (shards[0] as Redis).call('CLUSTER', 'SLOTS')) as [
    number,
    number,
    [string, number, ...unknown[]],
  ][];
  const ports = shards.map((s) => s.options.port);
  return Array.from({ length: users }, (_, user) => {
    const slot = keySlot(store.keyOf(`u${user}`));
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    const shard = ports.indexOf(range?.[2][1]);
    if (shard < 0) throw new Error(`no shard of this cluster serves slot ${slot}`);
    return shard;
  });
}

async function runCluster(
  seeds: { host: string; port: number }[],
  shards: Redis[],
  approach: string,
  users: number,
  maxBatch: number,
  log: (line: string) => void,
): Promise<ClusterCostRow> {
  const store = new RedisBucketStore({
    cluster: { nodes: seeds },
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
        redisCpuUsPerDecision:
          decisions === 0 ? 0 : Math.round(((a.cpuUs - b.cpuUs) / decisions) * 100) / 100,
        usecPerScriptCall:
          calls === 0 ? 0 : Math.round(((a.evalshaUsec - b.evalshaUsec) / calls) * 100) / 100,
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
    log(
      `  cluster ${approach}, ${users} users: ${row.decisionsPerCall} takes/call, ${row.redisCpuUsPerDecision} µs Redis CPU/decision (${row.decisionsPerRedisCoreSecond}/core-s)`,
    );
    return row;
  } finally {
    await store.close();
  }
}

export async function runClusterRows(log: (line: string) => void): Promise<ClusterCostRow[]> {
  const cluster = await startRedisCluster(3);
  const shards = cluster.nodes.map((n) => new Redis(n.url));
  try {
    return [
      await runCluster(cluster.seeds, shards, 'takes of a turn batched per slot', USERS, 128, log),
      await runCluster(cluster.seeds, shards, 'one script call per take', USERS, 1, log),
      await runCluster(
        cluster.seeds,
        shards,
        'takes of a turn batched per slot',
        FEW_USERS,
        128,
        log,
      ),
      await runCluster(cluster.seeds, shards, 'one script call per take', FEW_USERS, 1, log),
    ];
  } finally {
    for (const s of shards) s.disconnect();
    await cluster.stop();
  }
}

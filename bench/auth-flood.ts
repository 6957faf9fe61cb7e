// What an anonymous flood of GET /auth costs the auth server: ROUNDS rounds of REQUESTS requests
// (32 in parallel, fresh browsers, a valid client and a 100-character state), on the memory store
// and on a redis-server run with the chart's auth-redis arguments. After each round: the server's
// RSS, and for Redis its key count and used_memory. Nothing is stored before a sign-in, so the
// keys stay where they were and RSS levels off once V8 has sized its heap to the load.
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { chartRedisArgs, startRedis } from '../test/harness/redis.ts';
import { startStack } from '../test/integration/auth-stack.ts';
import { pool } from './token.ts';

const ROUNDS = Number(process.env['BENCH_FLOOD_ROUNDS'] ?? 4);
const REQUESTS = Number(process.env['BENCH_FLOOD_REQUESTS'] ?? 20_000);
const PARALLEL = 32;

interface StoreRun {
  readonly store: 'memory' | 'redis';
  /** RSS of the auth server before the flood and after each round, MiB. */
  readonly rssMiB: number[];
  /** Redis keys before and after each round (redis store). */
  readonly redisKeys?: number[];
  /** Redis used_memory before and after each round, MiB (redis store). */
  readonly redisUsedMiB?: number[];
  readonly requestsPerSecond: number;
  readonly non200: number;
}

export interface AuthFloodBenchResult {
  readonly suite: 'auth-flood';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string };
  readonly load: { rounds: number; requestsPerRound: number; parallel: number };
  readonly runs: StoreRun[];
}

const rssMiB = (pid: number | undefined) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid ?? 0}/status`, 'utf8'))?.[1] ?? 0) / 1024);
const mib = (bytes: number) => Math.round((bytes / 1048576) * 100) / 100;

async function flood(store: 'memory' | 'redis', log: (line: string) => void): Promise<StoreRun> {
  // The chart's arguments require a password (--requirepass from its generated Secret): one here too.
  const password = 'bench-auth-redis-password';
  const redis = store === 'redis' ? await startRedis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), { password }) : undefined;
  const stack = await startStack(redis !== undefined ? { redisUrl: redis.url } : {});
  const admin = redis !== undefined ? new Redis(redis.url) : undefined;
  try {
    const pid = stack.programs[0]?.child.pid;
    const url = `${stack.issuer}/auth?${new URLSearchParams({ client_id: 'demo-client', redirect_uri: stack.redirectUri, response_type: 'code', state: 'x'.repeat(100) })}`;
    const used = async () => (admin === undefined ? 0 : mib(Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0)));
    const rss = [rssMiB(pid)];
    const keys = admin !== undefined ? [await admin.dbsize()] : undefined;
    const usedMiB = admin !== undefined ? [await used()] : undefined;
    let non200 = 0;
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      await pool(REQUESTS, PARALLEL, async () => {
        const res = await fetch(url);
        await res.arrayBuffer();
        if (res.status !== 200) non200++;
      });
      rss.push(rssMiB(pid));
      if (admin !== undefined) {
        keys?.push(await admin.dbsize());
        usedMiB?.push(await used());
      }
      log(`  ${store} round ${round + 1}: RSS ${rss.at(-1)} MiB${admin !== undefined ? `, ${keys?.at(-1)} keys, ${usedMiB?.at(-1)} MiB in Redis` : ''}`);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      store,
      rssMiB: rss,
      ...(keys !== undefined ? { redisKeys: keys } : {}),
      ...(usedMiB !== undefined ? { redisUsedMiB: usedMiB } : {}),
      requestsPerSecond: Math.round((ROUNDS * REQUESTS) / seconds),
      non200,
    };
  } finally {
    admin?.disconnect();
    await stack.stop();
    await redis?.stop();
  }
}

export async function runAuthFloodBench(log: (line: string) => void): Promise<AuthFloodBenchResult> {
  const runs = [await flood('memory', log), await flood('redis', log)];
  return {
    suite: 'auth-flood',
    startedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '?', node: process.version },
    load: { rounds: ROUNDS, requestsPerRound: REQUESTS, parallel: PARALLEL },
    runs,
  };
}

export function authFloodMarkdown(r: AuthFloodBenchResult): string {
  const series = (xs: readonly number[] | undefined) => (xs === undefined ? '-' : xs.join(' / '));
  return [
    '### Anonymous GET /auth flood',
    '',
    `${r.load.rounds} rounds of ${r.load.requestsPerRound} GET /auth (${r.load.parallel} in parallel, no cookies), figures before the flood and after each round. ${r.machine.cpus} CPUs (${r.machine.model}), Node ${r.machine.node}.`,
    '',
    '| store | auth server RSS MiB | Redis keys | Redis used_memory MiB | requests/s | non-200 |',
    '|---|---|---|---|---:|---:|',
    ...r.runs.map((x) => `| ${x.store} | ${series(x.rssMiB)} | ${series(x.redisKeys)} | ${series(x.redisUsedMiB)} | ${x.requestsPerSecond} | ${x.non200} |`),
  ].join('\n');
}

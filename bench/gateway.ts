// Gateway benchmark (issue 2, first version): requests/s and p50/p99 latency for
//   1. the user service directly,
//   2. through the sidecar with the Redis limiter and a limit nobody reaches,
//   3. the same with the in-memory store.
// Everything on loopback, each run bounded (BENCH_DURATION_S, default 10 s, after a 2 s warm-up).
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stringify } from 'yaml';
import type { SidecarConfigInput } from '../sidecar/config.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram, type Program } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { ensureWrk, runWrk, type WrkResult } from './gateway-wrk.ts';

export interface GatewayScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly requestsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  readonly errors: WrkResult['errors'];
  readonly requests: number;
}

export interface GatewayBenchResult {
  readonly suite: 'gateway';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavg: number[] };
  readonly load: { generator: string; connections: number; threads: number; durationS: number; warmupS: number };
  readonly scenarios: GatewayScenarioResult[];
  /** Throughput of each sidecar scenario relative to the direct one. */
  readonly ratios: Record<string, number>;
}

/** A limit nobody reaches: 1e9 tokens of burst, refilled at 1e9/s. */
const unreachable = { replenishRate: 1_000_000_000, burstCapacity: 1_000_000_000, requestedTokens: 1 };

async function startSidecar(upstreamUrl: string, redisUrl: string | undefined): Promise<{ program: Program; url: string }> {
  const port = await freePort();
  const adminPort = await freePort();
  const config: SidecarConfigInput = {
    listen: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort },
    upstream: { url: upstreamUrl },
    route: { id: 'bench', path: '/**' },
    limiter: unreachable,
    ...(redisUrl !== undefined ? { redis: { url: redisUrl, commandTimeoutMs: 1000 } } : {}),
    logLevel: 'warn',
  };
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-')), 'sidecar.yaml');
  writeFileSync(file, stringify(config));
  const program = await startProgram({ entry: 'sidecar/main.ts', args: ['--config', file], waitPort: port, name: 'bench-sidecar' });
  return { program, url: `http://127.0.0.1:${port}` };
}

function toResult(name: string, description: string, r: WrkResult): GatewayScenarioResult {
  const ms = (us: number) => Math.round(us) / 1000;
  return {
    name,
    description,
    requestsPerSecond: Math.round(r.requests / (r.durationUs / 1e6)),
    latencyMs: { p50: ms(r.latencyUs.p50), p90: ms(r.latencyUs.p90), p99: ms(r.latencyUs.p99), max: ms(r.latencyUs.max) },
    errors: r.errors,
    requests: r.requests,
  };
}

export async function runGatewayBench(log: (line: string) => void = console.log): Promise<GatewayBenchResult> {
  ensureWrk();
  const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
  const warmupS = 2;
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const threads = 1;
  const startedAt = new Date().toISOString();
  const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadavg: os.loadavg() };

  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    waitPort: userPort,
    name: 'bench-user-service',
  });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const scenarios: GatewayScenarioResult[] = [];
  try {
    const measure = async (name: string, description: string, base: string) => {
      const url = `${base}/healthcheck/ready`;
      const headers = { 'USER-ID': 'bench-user' };
      log(`  ${name}: warm-up ${warmupS} s, then ${durationS} s with ${connections} connections`);
      await runWrk({ url, connections, threads, durationS: warmupS, headers });
      const result = toResult(name, description, await runWrk({ url, connections, threads, durationS, headers }));
      const bad = result.errors.status + result.errors.connect + result.errors.read + result.errors.timeout;
      if (bad > 0) log(`  ${name}: ${bad} errors/non-2xx responses (${JSON.stringify(result.errors)})`);
      scenarios.push(result);
      log(`  ${name}: ${result.requestsPerSecond} req/s, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms`);
    };

    await measure('direct', 'user-service directly (no gateway)', userUrl);

    const viaRedis = await startSidecar(userUrl, redis.url);
    try {
      await measure('sidecar-redis', 'through the sidecar, Redis limiter, limit never reached', viaRedis.url);
    } finally {
      await viaRedis.program.stop();
    }

    const viaMemory = await startSidecar(userUrl, undefined);
    try {
      await measure('sidecar-memory', 'through the sidecar, in-memory limiter, limit never reached', viaMemory.url);
    } finally {
      await viaMemory.program.stop();
    }
  } finally {
    await user.stop();
    await redis.stop();
  }

  const direct = scenarios.find((s) => s.name === 'direct')?.requestsPerSecond ?? 0;
  const ratios: Record<string, number> = {};
  for (const s of scenarios) if (s.name !== 'direct' && direct > 0) ratios[`${s.name}/direct`] = Math.round((s.requestsPerSecond / direct) * 100) / 100;
  return {
    suite: 'gateway',
    startedAt,
    machine,
    load: { generator: 'wrk (Debian)', connections, threads, durationS, warmupS },
    scenarios,
    ratios,
  };
}

export function gatewayMarkdown(result: GatewayBenchResult): string {
  const rows = result.scenarios.map(
    (s) => `| ${s.name} | ${s.description} | ${s.requestsPerSecond} | ${s.latencyMs.p50} | ${s.latencyMs.p99} | ${s.errors.status + s.errors.connect + s.errors.read + s.errors.timeout} |`,
  );
  return [
    `Gateway benchmark, ${result.startedAt}: ${result.machine.cpus} CPUs (${result.machine.model}), Node ${result.machine.node}, ` +
      `${result.load.generator} with ${result.load.connections} connections for ${result.load.durationS} s (after ${result.load.warmupS} s warm-up), all on loopback.`,
    '',
    '| scenario | what | requests/s | p50 ms | p99 ms | errors |',
    '|---|---|---:|---:|---:|---:|',
    ...rows,
    '',
    `Ratios to direct: ${Object.entries(result.ratios).map(([k, v]) => `${k} = ${v}`).join(', ')}`,
  ].join('\n');
}

// Gateway benchmark (issue 2, first version): requests/s and p50/p99 latency for
//   1. the user service directly,
//   2. through the sidecar with the Redis limiter and a limit nobody reaches,
//   3. the same with the in-memory store.
// Everything on loopback and bounded: BENCH_ROUNDS (3) interleaved rounds of BENCH_DURATION_S (10 s)
// per scenario after a 2 s warm-up; the median round is reported, with every round in the JSON.
// Besides throughput, the CPU time the front process spends per request is recorded: on a shared
// machine it varies much less than requests/s.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
  /** Median over the rounds. */
  readonly requestsPerSecond: number;
  /** Latency of the median round. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number };
  /** CPU time the process in front of wrk used per request (µs; user+system), median round. */
  readonly cpuUsPerRequest: number;
  readonly errors: WrkResult['errors'];
  readonly requests: number;
  readonly rounds: { requestsPerSecond: number; p50Ms: number; p99Ms: number; cpuUsPerRequest: number }[];
}

export interface GatewayBenchResult {
  readonly suite: 'gateway';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavgAtStart: number[] };
  readonly load: { generator: string; connections: number; threads: number; durationS: number; warmupS: number; rounds: number };
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

/** user+system CPU time of a process so far, in µs (Linux /proc; 0 elsewhere). */
function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
    return (ticks * 1e6) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

const median = <T>(xs: T[], by: (x: T) => number): T => [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)] as T;

export async function runGatewayBench(log: (line: string) => void = console.log): Promise<GatewayBenchResult> {
  ensureWrk();
  const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const warmupS = 2;
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const threads = 1;
  const startedAt = new Date().toISOString();
  const machine = { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadavgAtStart: os.loadavg() };

  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    waitPort: userPort,
    name: 'bench-user-service',
  });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const viaRedis = await startSidecar(userUrl, redis.url);
  const viaMemory = await startSidecar(userUrl, undefined);
  const targets = [
    { name: 'direct', description: 'user-service directly (no gateway)', base: userUrl, pid: user.child.pid },
    { name: 'sidecar-redis', description: 'through the sidecar, Redis limiter, limit never reached', base: viaRedis.url, pid: viaRedis.program.child.pid },
    { name: 'sidecar-memory', description: 'through the sidecar, in-memory limiter, limit never reached', base: viaMemory.url, pid: viaMemory.program.child.pid },
  ];
  const runs = new Map<string, { wrk: WrkResult; cpuUsPerRequest: number }[]>(targets.map((t) => [t.name, []]));
  try {
    const headers = { 'USER-ID': 'bench-user' };
    for (const t of targets) await runWrk({ url: `${t.base}/healthcheck/ready`, connections, threads, durationS: warmupS, headers });
    // Rounds interleave the scenarios so a busy neighbour hurts all of them alike.
    for (let round = 1; round <= rounds; round++) {
      for (const t of targets) {
        const before = cpuUs(t.pid);
        const wrk = await runWrk({ url: `${t.base}/healthcheck/ready`, connections, threads, durationS, headers });
        const cpuUsPerRequest = Math.round(((cpuUs(t.pid) - before) / Math.max(1, wrk.requests)) * 10) / 10;
        runs.get(t.name)?.push({ wrk, cpuUsPerRequest });
        const rps = Math.round(wrk.requests / (wrk.durationUs / 1e6));
        log(`  round ${round} ${t.name}: ${rps} req/s, p50 ${wrk.latencyUs.p50 / 1000} ms, p99 ${wrk.latencyUs.p99 / 1000} ms, ${cpuUsPerRequest} µs CPU/request`);
      }
    }
  } finally {
    await viaRedis.program.stop();
    await viaMemory.program.stop();
    await user.stop();
    await redis.stop();
  }

  const ms = (us: number) => Math.round(us) / 1000;
  const rps = (w: WrkResult) => Math.round(w.requests / (w.durationUs / 1e6));
  const scenarios: GatewayScenarioResult[] = targets.map((t) => {
    const all = runs.get(t.name) ?? [];
    const mid = median(all, (r) => rps(r.wrk));
    const errors = { connect: 0, read: 0, write: 0, status: 0, timeout: 0 };
    for (const r of all) for (const k of Object.keys(errors) as (keyof typeof errors)[]) errors[k] += r.wrk.errors[k];
    return {
      name: t.name,
      description: t.description,
      requestsPerSecond: rps(mid.wrk),
      latencyMs: { p50: ms(mid.wrk.latencyUs.p50), p90: ms(mid.wrk.latencyUs.p90), p99: ms(mid.wrk.latencyUs.p99), max: ms(mid.wrk.latencyUs.max) },
      cpuUsPerRequest: median(all, (r) => r.cpuUsPerRequest).cpuUsPerRequest,
      errors,
      requests: all.reduce((n, r) => n + r.wrk.requests, 0),
      rounds: all.map((r) => ({ requestsPerSecond: rps(r.wrk), p50Ms: ms(r.wrk.latencyUs.p50), p99Ms: ms(r.wrk.latencyUs.p99), cpuUsPerRequest: r.cpuUsPerRequest })),
    };
  });

  const direct = scenarios.find((s) => s.name === 'direct')?.requestsPerSecond ?? 0;
  const ratios: Record<string, number> = {};
  for (const s of scenarios) if (s.name !== 'direct' && direct > 0) ratios[`${s.name}/direct`] = Math.round((s.requestsPerSecond / direct) * 100) / 100;
  return {
    suite: 'gateway',
    startedAt,
    machine,
    load: { generator: 'wrk (Debian)', connections, threads, durationS, warmupS, rounds },
    scenarios,
    ratios,
  };
}

export function gatewayMarkdown(result: GatewayBenchResult): string {
  const rows = result.scenarios.map(
    (s) => `| ${s.name} | ${s.description} | ${s.requestsPerSecond} | ${s.latencyMs.p50} | ${s.latencyMs.p99} | ${s.cpuUsPerRequest} | ${s.errors.status + s.errors.connect + s.errors.read + s.errors.timeout} |`,
  );
  return [
    `Gateway benchmark, ${result.startedAt}: ${result.machine.cpus} CPUs (${result.machine.model}), Node ${result.machine.node}, ` +
      `${result.load.generator} with ${result.load.connections} connections, median of ${result.load.rounds} interleaved rounds of ${result.load.durationS} s ` +
      `(after ${result.load.warmupS} s warm-up), all on loopback; load average at start ${result.machine.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')}.`,
    '',
    '| scenario | what | requests/s | p50 ms | p99 ms | CPU µs/request (front process) | errors |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Ratios to direct: ${Object.entries(result.ratios).map(([k, v]) => `${k} = ${v}`).join(', ')}`,
  ].join('\n');
}

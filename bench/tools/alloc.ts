// Bytes allocated per request, and by which functions: the figure behind the scavenge counts of
// the tail tool (each scavenge empties the young generation, so fewer bytes per request means
// fewer scavenges and fewer objects promoted into the old generation that major cycles collect).
// Runs the bare proxy and both sidecars as deployed behind one user service and one redis-server,
// each at a fixed rate (bench/loadgen, default 4,000 req/s, about half the Redis sidecar's
// saturation on a 2-core machine) with V8's sampling heap profiler switched on through the
// inspector for BENCH_ALLOC_SECONDS (10). The profiler is told to keep the samples of objects the
// GC already collected, so the figure is everything allocated, garbage included, not what is live
// at the end. A sample stands for BENCH_ALLOC_INTERVAL bytes (1,024) on average: the totals are
// estimates to a few per cent, the smaller per-function figures rougher.
// `node bench/run.ts alloc` writes bench/results/alloc.{md,json}.
import os from 'node:os';
import { Redis } from 'ioredis';
import { connectInspector, type AllocationNode } from '../../test/harness/inspector.ts';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram, type Program } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { BARE_PROXY_DESCRIPTION, startBareProxy, startBenchSidecar } from '../gateway.ts';
import { ensureLoadgen, runRate } from '../loadgen.ts';
import { scriptCalls } from '../redis-cost.ts';

const RATE = Number(process.env['BENCH_ALLOC_RATE'] ?? 4000);
const SECONDS = Number(process.env['BENCH_ALLOC_SECONDS'] ?? 10);
const INTERVAL = Number(process.env['BENCH_ALLOC_INTERVAL'] ?? 1024);
const WARMUP_S = 5;
const TOP = 12;

export interface AllocationFold {
  readonly bytesPerRequest: number;
  /** Functions by the bytes they allocated themselves, per request, largest first. */
  readonly top: { readonly fn: string; readonly bytesPerRequest: number }[];
}

/** `name file:line` of a frame: the file without its directories (node: modules keep their name). */
function frameName(f: AllocationNode['callFrame']): string {
  const file = f.url === '' ? '(native)' : f.url.replace(/^.*\//, '');
  return `${f.functionName === '' ? '(anonymous)' : f.functionName} ${file}:${f.lineNumber + 1}`;
}

/** Sums a profile's samples per function (self bytes) and in all, per request answered. */
export function foldAllocations(head: AllocationNode, requests: number, top = TOP): AllocationFold {
  if (!(requests > 0)) throw new RangeError(`requests must be positive, got ${requests}`);
  const self = new Map<string, number>();
  let total = 0;
  const pending: AllocationNode[] = [head];
  for (let n = pending.pop(); n !== undefined; n = pending.pop()) {
    if (n.selfSize > 0) {
      const name = frameName(n.callFrame);
      self.set(name, (self.get(name) ?? 0) + n.selfSize);
      total += n.selfSize;
    }
    pending.push(...n.children);
  }
  return {
    bytesPerRequest: Math.round(total / requests),
    top: [...self]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([fn, bytes]) => ({ fn, bytesPerRequest: Math.round(bytes / requests) })),
  };
}

export interface AllocRun extends AllocationFold {
  readonly target: string;
  readonly description: string;
  readonly requests: number;
  readonly errors: number;
  /** Script calls Redis ran per request answered (the Redis sidecar): the fewer takes share a call, the more the call's own objects weigh per request. */
  readonly redisCallsPerRequest?: number;
}

export interface AllocBenchResult {
  readonly suite: 'alloc';
  readonly startedAt: string;
  readonly machine: string;
  readonly rate: number;
  readonly seconds: number;
  readonly samplingIntervalBytes: number;
  readonly runs: AllocRun[];
}

export async function runAllocBench(log: (line: string) => void = console.log): Promise<AllocBenchResult> {
  ensureLoadgen();
  const startedAt = new Date().toISOString();
  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'bench-alloc-user-service' });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const admin = new Redis(redis.url);
  const targets: { name: string; description: string; start: (nodeOptions: string) => Promise<{ url: string; program: Program; stop: () => Promise<unknown> }> }[] = [
    { name: 'bare-proxy', description: BARE_PROXY_DESCRIPTION, start: (nodeOptions) => startBareProxy(userUrl, 'bench-alloc-bare-proxy', { nodeOptions }) },
    ...(['memory', 'redis'] as const).map((store) => ({
      name: `sidecar-${store}`,
      description: `Portcullis sidecar as deployed, ${store === 'redis' ? 'Redis' : 'in-memory'} token bucket`,
      start: async (nodeOptions: string) => {
        const s = await startBenchSidecar(userUrl, store === 'redis' ? redis.url : undefined, `bench-alloc-sidecar-${store}`, 'deployed', { nodeOptions });
        return { url: s.url, program: s.program, stop: () => s.program.stop() };
      },
    })),
  ];
  const headers = { 'USER-ID': 'bench-user' };
  const runs: AllocRun[] = [];
  try {
    for (const t of targets) {
      const inspectPort = await freePort();
      const front = await t.start(`--inspect=127.0.0.1:${inspectPort}`);
      try {
        const url = `${front.url}/healthcheck/ready`;
        await runRate({ url, rate: RATE, durationS: WARMUP_S, connections: 50, headers });
        const inspector = await connectInspector(front.program);
        try {
          const callsBefore = await scriptCalls(admin);
          const { result: lg, head } = await inspector.sampleAllocations(INTERVAL, () => runRate({ url, rate: RATE, durationS: SECONDS, connections: 50, headers }));
          const calls = (await scriptCalls(admin)) - callsBefore;
          const fold = foldAllocations(head, lg.completed);
          const perRequest = t.name === 'sidecar-redis' && lg.completed > 0 ? { redisCallsPerRequest: Math.round((calls / lg.completed) * 1000) / 1000 } : {};
          runs.push({ target: t.name, description: t.description, requests: lg.completed, errors: lg.errors, ...fold, ...perRequest });
          log(`  ${t.name}: ${fold.bytesPerRequest} bytes allocated per request over ${lg.completed} requests`);
        } finally {
          inspector.close();
        }
      } finally {
        await front.stop();
      }
    }
  } finally {
    admin.disconnect();
    await user.stop();
    await redis.stop();
  }
  return { suite: 'alloc', startedAt, machine: `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`, rate: RATE, seconds: SECONDS, samplingIntervalBytes: INTERVAL, runs };
}

export function allocMarkdown(r: AllocBenchResult): string {
  const bare = r.runs.find((x) => x.target === 'bare-proxy')?.bytesPerRequest;
  return [
    `Allocation per request, ${r.startedAt}: ${r.machine}; bench/loadgen at ${r.rate} req/s, 50 connections, ${r.seconds} s per target after ${WARMUP_S} s of warm-up; V8's sampling heap profiler (one sample per ${r.samplingIntervalBytes} bytes on average) keeping the samples of objects already collected: everything allocated on the JavaScript heap, garbage included.`,
    '',
    '| target | what | requests | bytes allocated per request | / bare-proxy | Redis script calls per request | errors |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...r.runs.map((x) => `| ${x.target} | ${x.description} | ${x.requests} | ${x.bytesPerRequest} | ${bare === undefined ? '-' : `${(x.bytesPerRequest / bare).toFixed(2)}x`} | ${x.redisCallsPerRequest ?? '-'} | ${x.errors} |`),
    '',
    ...r.runs.flatMap((x) => [
      `${x.target}, the functions that allocated most themselves (bytes per request):`,
      '',
      '| function | bytes per request |',
      '|---|---:|',
      ...x.top.map((f) => `| \`${f.fn}\` | ${f.bytesPerRequest} |`),
      '',
    ]),
  ].join('\n').trimEnd();
}

if (import.meta.main) console.log(allocMarkdown(await runAllocBench()));

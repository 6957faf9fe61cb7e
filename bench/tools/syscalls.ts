// System calls per request: the bare proxy and both sidecars as deployed behind one user service
// and one redis-server, at fixed rates, counted by the kernel's syscall tracepoints through
// `perf stat` attached to each process (all its threads). At a fixed rate a Node proxy's CPU is
// mostly system calls and the wake-ups around them (a V8 profile of the sidecar puts two thirds of
// its busy time in socket writes), and unlike CPU time the count does not move with the
// neighbours: it shows which calls a change adds or saves, and how the Redis store's share of a
// request follows its script calls per request. Also per target, in a window of its own (perf's
// counting adds a little system time): user and system CPU µs per request from /proc.
//   node bench/run.ts syscalls    (BENCH_SYSCALLS_RATES=2000,5000; BENCH_SYSCALLS_SECONDS=5; BENCH_SYSCALLS_ROUNDS=3)
// The rates stay below the Redis sidecar's saturation, so that no target falls behind (which would
// batch more work per wake-up and lower its count). Needs perf (Debian's linux-perf, installed on
// demand) and root for tracepoints; where they cannot be counted the tool says so and stops.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Redis } from 'ioredis';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { cpuSplitUs, median, startBareProxy, startBenchSidecar } from '../gateway.ts';
import { ensureLoadgen, runRate } from '../loadgen.ts';
import { scriptCalls } from '../redis-cost.ts';

/** The calls counted by name; any other call counts only in `all`. */
export const NAMED_SYSCALLS = ['read', 'write', 'writev', 'epoll_pwait', 'epoll_ctl', 'futex', 'mprotect', 'madvise', 'mmap', 'munmap'] as const;
const TARGETS = ['bare-proxy', 'sidecar-memory', 'sidecar-redis'] as const;
type Target = (typeof TARGETS)[number];

/**
 * Counts from `perf stat -x ,` output (one `value,unit,event,...` line per event): `all` for
 * raw_syscalls:sys_enter, the call's name for syscalls:sys_enter_<name>. An event perf could not
 * count (`<not counted>`, `<not supported>`) is left out, so a missing name reads as unknown, not 0.
 */
export function parsePerfStat(stderr: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of stderr.split('\n')) {
    const [value, , event] = line.split(',');
    if (event === undefined || value === undefined || !/^\d+$/.test(value)) continue;
    if (event === 'raw_syscalls:sys_enter') counts.set('all', Number(value));
    else if (event.startsWith('syscalls:sys_enter_')) counts.set(event.slice('syscalls:sys_enter_'.length), Number(value));
  }
  return counts;
}

/** Counts the syscall tracepoints of process `pid` (every thread) while `during` runs. */
async function countSyscalls(pid: number, during: () => Promise<void>): Promise<Map<string, number>> {
  const events = ['raw_syscalls:sys_enter', ...NAMED_SYSCALLS.map((n) => `syscalls:sys_enter_${n}`)];
  const perf = spawn('perf', ['stat', '-x', ',', '-e', events.join(','), '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  perf.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => perf.once('exit', () => resolve()));
  // perf prints nothing until it stops; give it time to open its counters before the load starts.
  await new Promise((resolve) => setTimeout(resolve, 500));
  try {
    await during();
  } finally {
    perf.kill('SIGINT');
    await exited;
  }
  const counts = parsePerfStat(stderr);
  if (!counts.has('all')) throw new Error(`perf stat counted no system calls of pid ${pid}: ${stderr.trim().slice(0, 400)}`);
  return counts;
}

export interface SyscallsPoint {
  readonly target: Target;
  readonly rate: number;
  readonly round: number;
  readonly requests: number;
  /** System calls per request, by name (`all`: every call). */
  readonly perRequest: Record<string, number>;
  readonly userUsPerRequest: number;
  readonly systemUsPerRequest: number;
  /** Times the event loop's thread went to sleep (voluntary context switches), each one wake-up to pay. */
  readonly sleepsPerRequest: number;
  /** Redis sidecar only: script calls Redis ran per request. */
  readonly scriptCallsPerRequest?: number;
}

/** A target at one rate: the median over the rounds of every figure. */
export type SyscallsRow = Omit<SyscallsPoint, 'round' | 'requests'>;

export interface SyscallsBenchResult {
  readonly suite: 'syscalls';
  readonly startedAt: string;
  readonly machine: string;
  readonly node: string;
  /** What one system call costs on this machine: ns per `process.ppid` read (a getppid, no work in the kernel). */
  readonly syscallNs: number;
  readonly rounds: number;
  readonly seconds: number;
  readonly points: SyscallsPoint[];
  readonly rows: SyscallsRow[];
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Per target and rate, the median over the rounds of every figure. */
export function summarizeSyscalls(points: readonly SyscallsPoint[]): SyscallsRow[] {
  const rows: SyscallsRow[] = [];
  for (const rate of [...new Set(points.map((p) => p.rate))]) {
    for (const target of TARGETS) {
      const mine = points.filter((p) => p.rate === rate && p.target === target);
      if (mine.length === 0) continue;
      const names = [...new Set(mine.flatMap((p) => Object.keys(p.perRequest)))];
      const calls = mine.flatMap((p) => (p.scriptCallsPerRequest === undefined ? [] : [p.scriptCallsPerRequest]));
      rows.push({
        target,
        rate,
        perRequest: Object.fromEntries(names.map((n) => [n, round2(median(mine.map((p) => p.perRequest[n] ?? 0)))])),
        userUsPerRequest: round2(median(mine.map((p) => p.userUsPerRequest))),
        systemUsPerRequest: round2(median(mine.map((p) => p.systemUsPerRequest))),
        sleepsPerRequest: round2(median(mine.map((p) => p.sleepsPerRequest))),
        ...(calls.length > 0 ? { scriptCallsPerRequest: Math.round(median(calls) * 1000) / 1000 } : {}),
      });
    }
  }
  return rows;
}

/**
 * The price of entering and leaving the kernel here, which turns the counts into time: `process.ppid`
 * makes a getppid call on every read, and the kernel does no work for it. Median of 5 rounds.
 */
export function syscallNs(calls = 200_000): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += process.ppid;
    rounds.push(Number(process.hrtime.bigint() - start) / calls);
  }
  if (sink <= 0) throw new Error('process.ppid read as 0');
  return Math.round(median(rounds));
}

/** The context switches so far in a /proc/PID/status text: voluntary (the thread slept) and not (it was preempted). */
export function parseContextSwitches(status: string): { voluntary: number; involuntary: number } {
  const field = (name: string): number => {
    const m = new RegExp(`^${name}:\\s*(\\d+)$`, 'm').exec(status);
    if (m === null) throw new Error(`no ${name} in the process status`);
    return Number(m[1]);
  };
  return { voluntary: field('voluntary_ctxt_switches'), involuntary: field('nonvoluntary_ctxt_switches') };
}

/** The event loop's sleeps so far: the voluntary context switches of the process's main thread. */
const sleeps = (pid: number): number => parseContextSwitches(readFileSync(`/proc/${pid}/status`, 'utf8')).voluntary;

/** Installs perf from Debian when it is missing; throws with the reason when it cannot count tracepoints. */
function ensurePerf(): void {
  try {
    execFileSync('perf', ['--version'], { stdio: 'ignore' });
  } catch {
    execFileSync(new URL('../../scripts/ensure-system-deps.sh', import.meta.url).pathname, ['perf:linux-perf'], { stdio: 'inherit' });
  }
  try {
    execFileSync('perf', ['stat', '-x', ',', '-e', 'raw_syscalls:sys_enter', '--', 'true'], { stdio: 'pipe' });
  } catch (err) {
    throw new Error(`perf cannot count syscall tracepoints here (root, or kernel.perf_event_paranoid <= -1 and a mounted tracefs, are needed): ${(err as Error).message}`);
  }
}

export async function runSyscallsBench(log: (line: string) => void = console.log): Promise<SyscallsBenchResult> {
  ensurePerf();
  ensureLoadgen();
  const rates = (process.env['BENCH_SYSCALLS_RATES'] ?? '2000,5000').split(',').map(Number).filter((n) => n > 0);
  const seconds = Number(process.env['BENCH_SYSCALLS_SECONDS'] ?? 5);
  const rounds = Number(process.env['BENCH_SYSCALLS_ROUNDS'] ?? 3);
  const startedAt = new Date().toISOString();
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'bench-syscalls-user-service' });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const headers = { 'USER-ID': 'bench-user' };
  const points: SyscallsPoint[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  try {
    const bare = await startBareProxy(userUrl, 'bench-syscalls-bare-proxy');
    stops.push(() => bare.stop());
    const memory = await startBenchSidecar(userUrl, undefined, 'bench-syscalls-sidecar-memory');
    stops.push(() => memory.program.stop());
    const withRedis = await startBenchSidecar(userUrl, redis.url, 'bench-syscalls-sidecar-redis');
    stops.push(() => withRedis.program.stop());
    const targets: { name: Target; url: string; pid: number | undefined }[] = [
      { name: 'bare-proxy', url: bare.url, pid: bare.pid },
      { name: 'sidecar-memory', url: memory.url, pid: memory.program.child.pid },
      { name: 'sidecar-redis', url: withRedis.url, pid: withRedis.program.child.pid },
    ];
    const drive = (url: string, rate: number) => runRate({ url: `${url}/healthcheck/ready`, rate, durationS: seconds, connections: 50, headers });
    // V8 compiles by use: warm every target up at the highest rate first.
    for (const t of targets) await runRate({ url: `${t.url}/healthcheck/ready`, rate: Math.max(...rates), durationS: 3, connections: 50, headers });
    for (let round = 0; round < rounds; round++) {
      for (const rate of rates) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(k + round) % targets.length] as (typeof targets)[number];
          const pid = t.pid;
          if (pid === undefined) throw new Error(`${t.name} has no pid`);
          const cpuBefore = cpuSplitUs(pid);
          const sleepsBefore = sleeps(pid);
          const timed = await drive(t.url, rate);
          const cpuAfter = cpuSplitUs(pid);
          const sleepsAfter = sleeps(pid);
          let counted = 0;
          const callsBefore = await scriptCalls(admin);
          const counts = await countSyscalls(pid, async () => {
            const lg = await drive(t.url, rate);
            // A failed or dropped request would make the per-request figures of this window wrong.
            if (lg.errors + lg.dropped > 0 || lg.completed === 0) throw new Error(`${t.name} at ${rate}/s under perf: ${lg.completed} answered, ${lg.errors} errors, ${lg.dropped} dropped`);
            counted = lg.completed;
          });
          const calls = (await scriptCalls(admin)) - callsBefore;
          if (timed.errors + timed.dropped > 0 || timed.completed === 0) throw new Error(`${t.name} at ${rate}/s: ${timed.completed} answered, ${timed.errors} errors, ${timed.dropped} dropped`);
          const point: SyscallsPoint = {
            target: t.name,
            rate,
            round,
            requests: counted,
            perRequest: Object.fromEntries([...counts].map(([n, v]) => [n, v / counted])),
            userUsPerRequest: (cpuAfter.user - cpuBefore.user) / timed.completed,
            systemUsPerRequest: (cpuAfter.system - cpuBefore.system) / timed.completed,
            sleepsPerRequest: (sleepsAfter - sleepsBefore) / timed.completed,
            ...(t.name === 'sidecar-redis' ? { scriptCallsPerRequest: calls / counted } : {}),
          };
          points.push(point);
          log(`  round ${round + 1} ${rate}/s ${t.name}: ${round2(point.perRequest['all'] ?? 0)} system calls per request, CPU ${round2(point.userUsPerRequest)} user + ${round2(point.systemUsPerRequest)} system µs, ${round2(point.sleepsPerRequest)} sleeps${point.scriptCallsPerRequest === undefined ? '' : `, ${round2(point.scriptCallsPerRequest)} script calls`}`);
        }
      }
    }
  } finally {
    for (const stop of stops.reverse()) await stop();
    admin.disconnect();
    await user.stop();
    await redis.stop();
  }
  return {
    suite: 'syscalls',
    startedAt,
    machine: `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`,
    node: process.version,
    syscallNs: syscallNs(),
    rounds,
    seconds,
    points,
    rows: summarizeSyscalls(points),
  };
}

export function syscallsMarkdown(r: SyscallsBenchResult): string {
  const rates = [...new Set(r.rows.map((x) => x.rate))];
  const out = [
    '### System calls per request',
    '',
    `${r.startedAt}: ${r.machine}, Node ${r.node}; one system call costs ${r.syscallNs} ns here (a getppid from Node, which the kernel answers without work). The bare proxy and both sidecars as deployed behind one user service (and one redis-server), bench/loadgen at a fixed rate over 50 connections; ` +
      `system calls of every thread of the front process counted by the kernel's tracepoints (perf stat), CPU from /proc in a window of its own; median of ${r.rounds} rounds of ${r.seconds} s per target and rate, the order rotated each round.`,
  ];
  for (const rate of rates) {
    const rows = r.rows.filter((x) => x.rate === rate);
    const names = ['all', ...NAMED_SYSCALLS].filter((n) => rows.some((x) => (x.perRequest[n] ?? 0) >= 0.01));
    const redis = rows.find((x) => x.target === 'sidecar-redis');
    const memory = rows.find((x) => x.target === 'sidecar-memory');
    const calls = redis?.scriptCallsPerRequest;
    // The store's share per script call: the Redis sidecar's figure over the memory sidecar's, per call (a column only when both ran).
    const both = redis !== undefined && memory !== undefined;
    const share = (pick: (x: SyscallsRow) => number): string =>
      !both ? '' : ` ${calls ? round2((pick(redis) - pick(memory)) / calls).toFixed(2) : '-'} |`;
    out.push('', `**${rate} req/s**${calls === undefined ? '' : ` (the Redis sidecar: ${calls} script calls per request)`}`, '');
    out.push(`| per request | ${rows.map((x) => x.target).join(' | ')} |${both ? ' Redis store\'s share per script call |' : ''}`);
    out.push(`|---|${rows.map(() => '---:').join('|')}|${both ? '---:|' : ''}`);
    for (const n of names) {
      const pick = (x: SyscallsRow) => x.perRequest[n] ?? 0;
      out.push(`| ${n === 'all' ? 'system calls' : `\`${n}\``} | ${rows.map((x) => pick(x).toFixed(2)).join(' | ')} |${share(pick)}`);
    }
    const slept = (x: SyscallsRow) => x.sleepsPerRequest;
    out.push(`| sleeps of the event loop (each a wake-up) | ${rows.map((x) => slept(x).toFixed(2)).join(' | ')} |${share(slept)}`);
    for (const [label, pick] of [['user CPU µs', (x: SyscallsRow) => x.userUsPerRequest], ['system CPU µs', (x: SyscallsRow) => x.systemUsPerRequest]] as const) {
      out.push(`| ${label} | ${rows.map((x) => pick(x).toFixed(1)).join(' | ')} |${share(pick)}`);
    }
  }
  return out.join('\n');
}

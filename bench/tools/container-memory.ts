// Container memory (the goal: under 100 MB under load): the sidecar as deployed (bundle +
// SIDECAR_ENV), run inside a real memory cgroup with a hard limit, under wrk at saturation. This is
// what a pod's `resources.limits.memory` does to it, which RSS alone does not tell: RSS counts the
// pages of the node executable in full, while the kernel charges a page-cache page to the first
// cgroup that read it and reclaims clean file pages before it kills anything.
// Two cases, each at the goal's limit (100 MiB), a 160 MiB limit and an unconstrained run (1 GiB):
//   executable shared   the node binary's pages are already cached by other processes (several
//                       Node pods from one image on a node): the cgroup pays for the sidecar's
//                       own memory only;
//   executable charged  a copy of the binary with its page cache dropped first (one such pod
//                       alone on a node): the cgroup also pays for every page of node it reads.
// Reported per run: requests/s, CPU µs per request, major page faults during the measured run
// (pages read back after reclaim), the cgroup's peak charge and its split, OOM kills.
// Needs root and a writable memory controller (cgroup v1 or v2); elsewhere it says so and records
// why, and nothing is counted as measured.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../test/harness/ports.ts';
import { startProgram } from '../../test/harness/programs.ts';
import { startRedis } from '../../test/harness/redis.ts';
import { cpuUs, startBenchSidecar } from '../gateway.ts';
import { ensureWrk, runWrk, wrkErrors } from '../gateway-wrk.ts';

const MiB = 1024 * 1024;

interface MemoryCgroup {
  readonly version: 1 | 2;
  readonly dir: string;
  setLimit(bytes: number): void;
  /** Highest charge since the cgroup was made (v1: max_usage_in_bytes, v2: memory.peak), bytes. */
  peak(): number;
  /** Times the charge hit the limit (v1 failcnt, v2 memory.events max). */
  limitHits(): number;
  oomKills(): number;
  /** Anonymous and file bytes charged now (memory.stat). */
  split(): { anon: number; file: number };
  /** What the kubelet reports as the container's working set: the charge less its inactive file pages, bytes. */
  workingSet(): number;
  remove(): void;
}

const read = (file: string) => readFileSync(file, 'utf8').trim();
const statField = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

/** A figure in a cgroup file: the whole file is a number, or a `name value` line of it. */
type Figure = readonly [file: string, field?: string];

/** Where each cgroup version keeps the figures this suite reads (memory.stat holds anon and file). */
const layouts = {
  1: { limit: 'memory.limit_in_bytes', usage: 'memory.usage_in_bytes', peak: ['memory.max_usage_in_bytes'], limitHits: ['memory.failcnt'], oomKills: ['memory.oom_control', 'oom_kill'], anon: 'rss', file: 'cache', inactiveFile: 'total_inactive_file' },
  2: { limit: 'memory.max', usage: 'memory.current', peak: ['memory.peak'], limitHits: ['memory.events', 'max'], oomKills: ['memory.events', 'oom_kill'], anon: 'anon', file: 'file', inactiveFile: 'inactive_file' },
} as const satisfies Record<1 | 2, { limit: string; usage: string; peak: Figure; limitHits: Figure; oomKills: Figure; anon: string; file: string; inactiveFile: string }>;

function cgroupAt(version: 1 | 2, dir: string): MemoryCgroup {
  const l = layouts[version];
  const figure = ([file, field]: Figure) => {
    const text = read(path.join(dir, file));
    return field === undefined ? Number(text) : statField(text, field);
  };
  return {
    version,
    dir,
    setLimit: (b) => writeFileSync(path.join(dir, l.limit), String(b)),
    peak: () => figure(l.peak),
    limitHits: () => figure(l.limitHits),
    oomKills: () => figure(l.oomKills),
    split: () => {
      const stat = read(path.join(dir, 'memory.stat'));
      return { anon: statField(stat, l.anon), file: statField(stat, l.file) };
    },
    workingSet: () => Math.max(0, Number(read(path.join(dir, l.usage))) - statField(read(path.join(dir, 'memory.stat')), l.inactiveFile)),
    remove: () => rmdirSync(dir),
  };
}

/** A new child of this process' memory cgroup, or the reason there can be none. */
export function makeCgroup(name: string): MemoryCgroup | string {
  const lines = read('/proc/self/cgroup').split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  const v1Root = '/sys/fs/cgroup/memory';
  const v2 = lines.find((l) => l.startsWith('0::'));
  const v2Root = existsSync('/sys/fs/cgroup/cgroup.controllers') ? '/sys/fs/cgroup' : '/sys/fs/cgroup/unified';
  try {
    if (v1 !== undefined && existsSync(path.join(v1Root, 'memory.limit_in_bytes'))) {
      const dir = path.join(v1Root, v1.split(':')[2] ?? '/', name);
      mkdirSync(dir);
      return cgroupAt(1, dir);
    }
    if (v2 === undefined) return 'no memory cgroup controller in /proc/self/cgroup';
    const parent = path.join(v2Root, v2.slice(3));
    if (!read(path.join(parent, 'cgroup.subtree_control')).split(' ').includes('memory')) return `the cgroup v2 group ${parent} does not delegate the memory controller`;
    const dir = path.join(parent, name);
    mkdirSync(dir);
    return cgroupAt(2, dir);
  } catch (err) {
    return `cannot make a memory cgroup: ${(err as Error).message}`;
  }
}

/** Major page faults of a process so far (/proc/PID/stat field 12). */
function majorFaults(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(read(`/proc/${pid}/stat`).split(') ')[1]?.split(' ')[9] ?? 0);
  } catch {
    return 0;
  }
}

export interface ContainerMemoryRun {
  readonly executable: 'shared' | 'charged';
  readonly limitMiB: number;
  readonly requestsPerSecond: number;
  readonly cpuUsPerRequest: number;
  /** Pages read back from disk during the measured run (thrashing shows here). */
  readonly majorFaults: number;
  readonly peakChargeMiB: number;
  readonly chargeAtEnd: { anonMiB: number; fileMiB: number };
  readonly limitHits: number;
  readonly oomKills: number;
  readonly errors: number;
}

export interface ContainerMemoryBenchResult {
  readonly suite: 'container-memory';
  readonly startedAt: string;
  /** Why nothing was measured, when the machine has no memory cgroup to use. */
  readonly notRun?: string;
  readonly cgroupVersion?: 1 | 2;
  readonly runs: ContainerMemoryRun[];
  readonly goal: { name: string; goal: string; measured: string; met: boolean } | undefined;
}

export async function runContainerMemoryBench(log: (line: string) => void = console.log): Promise<ContainerMemoryBenchResult> {
  ensureWrk();
  const startedAt = new Date().toISOString();
  const probe = makeCgroup(`portcullis-bench-probe-${process.pid}`);
  if (typeof probe === 'string') {
    log(`container-memory: NOT RUN on this machine: ${probe}`);
    return { suite: 'container-memory', startedAt, notRun: probe, runs: [], goal: undefined };
  }
  probe.remove();
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 10);
  const warmupS = Number(process.env['BENCH_WARMUP_S'] ?? 5);
  const limits = (process.env['BENCH_MEMORY_LIMITS_MIB'] ?? '100,160,1024').split(',').map(Number).filter((n) => n > 0);
  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'bench-user-service' });
  // The "charged" case runs a private copy of node whose page cache is dropped before each run.
  // Not in a tmpfs /tmp: shared-memory pages cannot be dropped from the cache.
  const cacheRoot = path.join(process.env['XDG_CACHE_HOME'] ?? path.join(os.homedir(), '.cache'), 'portcullis');
  mkdirSync(cacheRoot, { recursive: true });
  const copyDir = mkdtempSync(path.join(cacheRoot, 'node-copy-'));
  const nodeCopy = path.join(copyDir, 'node');
  copyFileSync(process.execPath, nodeCopy);
  execFileSync('chmod', ['755', nodeCopy]);
  const runs: ContainerMemoryRun[] = [];
  try {
    for (const executable of ['shared', 'charged'] as const) {
      for (const limitMiB of limits) {
        const cg = makeCgroup(`portcullis-bench-${process.pid}-${executable}-${limitMiB}`);
        if (typeof cg === 'string') throw new Error(cg);
        cg.setLimit(limitMiB * MiB);
        if (executable === 'charged') {
          execFileSync('sync', [nodeCopy]); // dirty pages cannot be dropped
          execFileSync('dd', [`if=${nodeCopy}`, 'iflag=nocache', 'count=0', 'status=none']); // GNU dd: drop the whole file's cache
        }
        const procs = path.join(cg.dir, 'cgroup.procs');
        const sidecar = await startBenchSidecar(`http://127.0.0.1:${userPort}`, redis.url, `bench-sidecar-${executable}-${limitMiB}`, 'deployed', {
          node: executable === 'charged' ? nodeCopy : process.execPath,
          launcher: ['sh', '-c', `echo $$ > ${procs} && exec "$@"`, 'sh'],
        }).catch((err: unknown) => {
          cg.remove();
          throw err;
        });
        const pid = sidecar.program.child.pid;
        try {
          const url = `${sidecar.url}/healthcheck/ready`;
          const headers = { 'USER-ID': 'bench-user' };
          await runWrk({ url, connections: 50, threads: 1, durationS: warmupS, headers });
          const cpu0 = cpuUs(pid);
          const faults0 = majorFaults(pid);
          const wrk = await runWrk({ url, connections: 50, threads: 1, durationS, headers });
          const split = cg.split();
          const run: ContainerMemoryRun = {
            executable,
            limitMiB,
            requestsPerSecond: Math.round(wrk.requests / (wrk.durationUs / 1e6)),
            // No request served (thrashing): no per-request figure.
            cpuUsPerRequest: wrk.requests === 0 ? 0 : Math.round(((cpuUs(pid) - cpu0) / wrk.requests) * 10) / 10,
            majorFaults: majorFaults(pid) - faults0,
            peakChargeMiB: Math.round((cg.peak() / MiB) * 10) / 10,
            chargeAtEnd: { anonMiB: Math.round((split.anon / MiB) * 10) / 10, fileMiB: Math.round((split.file / MiB) * 10) / 10 },
            limitHits: cg.limitHits(),
            oomKills: cg.oomKills(),
            errors: wrkErrors(wrk),
          };
          runs.push(run);
          log(
            `  executable ${executable}, limit ${limitMiB} MiB: ${run.requestsPerSecond} req/s, ${run.cpuUsPerRequest} µs CPU/request, ${run.majorFaults} major faults, ` +
              `peak charge ${run.peakChargeMiB} MiB (now anon ${run.chargeAtEnd.anonMiB} + file ${run.chargeAtEnd.fileMiB}), limit hit ${run.limitHits} times, OOM kills ${run.oomKills}`,
          );
        } finally {
          await sidecar.program.stop();
          cg.remove();
        }
      }
    }
  } finally {
    await user.stop();
    await redis.stop();
    rmSync(copyDir, { recursive: true, force: true });
  }
  const free = runs.find((r) => r.executable === 'shared' && r.limitMiB >= 1024);
  const at100 = runs.find((r) => r.executable === 'shared' && r.limitMiB === 100);
  const goal =
    free === undefined || at100 === undefined
      ? undefined
      : {
          name: 'sidecar under a 100 MiB container memory limit at saturation (node executable shared with other Node pods)',
          goal: 'no OOM kill, no thrashing, throughput kept',
          measured: `${at100.requestsPerSecond} req/s vs ${free.requestsPerSecond} unconstrained, ${at100.majorFaults} major faults, ${at100.oomKills} OOM kills, peak charge ${at100.peakChargeMiB} MiB`,
          met: at100.oomKills === 0 && at100.errors === 0 && at100.majorFaults < 100 && at100.requestsPerSecond >= free.requestsPerSecond * 0.9,
        };
  return { suite: 'container-memory', startedAt, cgroupVersion: probe.version, runs, goal };
}

export function containerMemoryMarkdown(result: ContainerMemoryBenchResult): string {
  if (result.notRun !== undefined) return `Container memory, ${result.startedAt}: **not run on this machine**: ${result.notRun}.`;
  return [
    `Container memory, ${result.startedAt}: the sidecar as deployed in a memory cgroup (v${result.cgroupVersion}) with a hard limit, wrk at saturation (50 connections); ` +
      '"shared": the node executable already cached by other processes; "charged": a private copy of node with its page cache dropped, so the cgroup pays for its pages.',
    '',
    '| node executable | limit MiB | req/s | CPU µs/req | major faults (measured run) | peak charge MiB | charge at end: anon + file MiB | limit hits | OOM kills | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.runs.map(
      (r) =>
        `| ${r.executable} | ${r.limitMiB} | ${r.requestsPerSecond} | ${r.cpuUsPerRequest === 0 ? '-' : r.cpuUsPerRequest} | ${r.majorFaults} | ${r.peakChargeMiB} | ${r.chargeAtEnd.anonMiB} + ${r.chargeAtEnd.fileMiB} | ${r.limitHits} | ${r.oomKills} | ${r.errors} |`,
    ),
    ...(result.goal === undefined ? [] : ['', '| goal | target | measured | met |', '|---|---|---|---|', `| ${result.goal.name} | ${result.goal.goal} | ${result.goal.measured} | ${result.goal.met ? 'yes' : 'no'} |`]),
  ].join('\n');
}

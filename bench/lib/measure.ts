// What the suites read: about a process from /proc (Linux; zeros elsewhere or once it is gone), and
// from redis-server about its own work (INFO cpu, INFO commandstats), to charge Redis' CPU to the
// decisions that caused it; the machine a result comes from, and the small statistics every suite
// shares.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { peakRssBytes, statusFieldsKiB } from '../../test/harness/raw-http.ts';
import type { Redis } from 'ioredis';

type Pid = number | undefined;

/** `read(pid)` of each process, leaving out one that is gone (or none). */
function readEach<T>(pids: Pid[], read: (pid: number) => T): T[] {
  return pids.flatMap((pid) => {
    try {
      return pid === undefined ? [] : [read(pid)];
    } catch {
      return []; // the process is gone
    }
  });
}

const total = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

/** user+system CPU time of the processes so far (all their threads), µs. */
export const cpuUs = (...pids: Pid[]): number =>
  total(
    readEach(pids, (pid) => {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      // utime, stime (fields 14, 15) in ticks; USER_HZ is 100 on Linux
      return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
    }),
  );

/**
 * Time the processes spent runnable but waiting for a CPU so far, ms (/proc/PID/schedstat, field
 * 2). On a shared machine this is what turns into latency: a busy neighbour shows here, not in CPU time.
 */
export const runDelayMs = (...pids: Pid[]): number => {
  const waited = (pid: number) => readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1];
  return total(readEach(pids, (pid) => Number(waited(pid)))) / 1e6;
};

/** Resident set of the processes now, split into anonymous and file pages (one read each), KiB. */
export function rssSplitKiB(...pids: Pid[]): { rss: number; anon: number; file: number } {
  const f = readEach(pids, (pid) => statusFieldsKiB(pid, ['VmRSS', 'RssAnon', 'RssFile']));
  const of = (k: 'VmRSS' | 'RssAnon' | 'RssFile') => total(f.map((x) => x[k]));
  return { rss: of('VmRSS'), anon: of('RssAnon'), file: of('RssFile') };
}

/** Peak resident set (VmHWM) of the processes together, MiB. */
export const peakRssMiB = (...pids: Pid[]): number => mib(total(readEach(pids, peakRssBytes)));

/** The machine a result was measured on, with the load average at the start and now. */
export function machine(loadavgAtStart: number[]) {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    model: cpus[0]?.model ?? 'unknown',
    node: process.version,
    loadavgAtStart,
    loadavgAtEnd: os.loadavg(),
  };
}

/** Load averages as the results print them: `1.2 0.9 0.7`. */
export const loadavg = (xs: readonly number[] | undefined) =>
  (xs ?? []).map((x) => x.toFixed(1)).join(' ');

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
}

/** The round whose `key` is the median one (the upper of the two middle ones of an even count). */
export function medianRound<T>(rounds: readonly T[], key: (round: T) => number): T | undefined {
  return [...rounds].sort((a, b) => key(a) - key(b))[Math.floor(rounds.length / 2)];
}

/** The median of per-round figures (e.g. ratios) and the lowest and highest round, to 2 places. */
export function spread(xs: readonly number[]): { median: number; low: number; high: number } {
  return { median: r2(median(xs)), low: r2(Math.min(...xs)), high: r2(Math.max(...xs)) };
}

export const r1 = (x: number): number => Math.round(x * 10) / 10;
export const r2 = (x: number): number => Math.round(x * 100) / 100;
/** Bytes in MiB, to one place. */
export const mib = (bytes: number): number => r1(bytes / 2 ** 20);
/** µs in ms, to the µs. */
export const ms = (us: number): number => Math.round(us) / 1000;

/** The redis-server process's user + sys CPU so far (INFO cpu), µs. */
export async function redisCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? 0);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** Commands a client sends; the commands a script runs inside are counted by Redis as well, under their own names, and are left out here. */
const TOP_LEVEL = new Set(['evalsha', 'eval', 'incrby', 'expire']);
/** Commands of the measuring itself, left out altogether. */
const ADMIN = new Set('info config ping client hello script select flushall'.split(' '));

/** The calls of every command but the admin ones, and the calls and usec of those a client sent. */
export async function commandStats(admin: Redis) {
  const stats = { usec: 0, topLevelCalls: 0, calls: {} as Record<string, number> };
  const info = await admin.info('commandstats');
  for (const [, name = '', calls, usec] of info.matchAll(
    /^cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/gm,
  )) {
    if (ADMIN.has(name.split('|')[0] ?? '')) continue;
    stats.calls[name] = Number(calls);
    if (TOP_LEVEL.has(name)) {
      stats.topLevelCalls += Number(calls);
      stats.usec += Number(usec);
    }
  }
  return stats;
}

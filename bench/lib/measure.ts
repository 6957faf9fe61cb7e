// What the suites read about a process from /proc (Linux; zeros elsewhere or once it is gone), and
// the small statistics every suite shares.
import { readFileSync } from 'node:fs';
import { statusFieldsKiB, statusKiB } from '../../test/harness/raw-http.ts';

/** user+system CPU time of a process so far (all its threads), µs. */
export function cpuUs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    // utime, stime (fields 14, 15) in ticks; USER_HZ is 100 on Linux
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
  } catch {
    return 0;
  }
}

/**
 * Time a process spent runnable but waiting for a CPU so far, ms (/proc/PID/schedstat, field 2).
 * On a shared machine this is what turns into latency: a busy neighbour shows here, not in CPU time.
 */
export function runDelayMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return 0;
  }
}

/** Resident set of a process now, split into anonymous and file pages, KiB. */
export function rssSplitKiB(pid: number | undefined): { rss: number; anon: number; file: number } {
  try {
    if (pid !== undefined) {
      const f = statusFieldsKiB(pid, ['VmRSS', 'RssAnon', 'RssFile']);
      return { rss: f.VmRSS, anon: f.RssAnon, file: f.RssFile };
    }
  } catch {
    // the process is gone
  }
  return { rss: 0, anon: 0, file: 0 };
}

/** Peak resident set (VmHWM) of a process, MiB. */
export function peakRssMiB(pid: number | undefined): number {
  try {
    return pid === undefined ? 0 : Math.round((statusKiB(pid, 'VmHWM') / 1024) * 10) / 10;
  } catch {
    return 0;
  }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return 0;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1
    ? (s[mid] as number)
    : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** The targets in the order of one round: each round starts `shift` targets later than the first. */
export function rotated<T>(targets: readonly T[], shift: number): T[] {
  return targets.map((_, i) => targets[(i + shift) % targets.length] as T);
}

export const r2 = (x: number): number => Math.round(x * 100) / 100;

// Instructions per request under valgrind's callgrind: the CPU figure that repeats on a shared VM,
// where requests/s and CPU time move by a third with whatever else runs. V8 tiers code up by how
// often it runs, not by time (a Node proxy here needs ~20,000-50,000 requests before its count per
// request settles), so a front is warmed up by request count; then callgrind's counters are zeroed,
// wrk drives it for the measured window, and the counters are dumped. The count covers every
// user-space thread (event loop, compiler, GC helpers) and leaves out the kernel (system calls,
// loopback TCP: about a third of a Node proxy's CPU here). A heavy neighbour still moves it (one
// count was 35 % high while a Go build kept both cores busy): compare counts from one quiet run.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runWrk, wrkErrors } from './load.ts';
import { ensureSystemDeps } from './suite.ts';

/** The total of a callgrind output file (`summary:` or `totals:` line), or undefined. */
export function callgrindTotal(text: string): number | undefined {
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  return m === null ? undefined : Number(m[1]);
}

/** valgrind installed from Debian when missing, and its version; undefined when it cannot be had. */
export function valgrindVersion(): string | undefined {
  try {
    ensureSystemDeps('valgrind:valgrind');
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

/** The warm-up and the measured window of countInstructions. */
export const COUNTED = { warmupRequests: 50_000, durationS: 60 };

/**
 * Warms a front up by request count, zeroes its counters, drives it with wrk (50 connections) for
 * a while (COUNTED): instructions per request answered. `pid`: the front's process, started under
 * `valgrind --tool=callgrind --callgrind-out-file=<outDir>/callgrind.%p`.
 */
export async function countInstructions(
  front: { pid: number; url: string },
  outDir: string,
  headers: Record<string, string>,
) {
  const { pid, url } = front;
  const wrk = (durationS: number) => runWrk({ url, connections: 50, durationS, headers });
  let warmed = 0;
  while (warmed < COUNTED.warmupRequests) {
    const chunk = (await wrk(20)).requests;
    if (chunk === 0) throw new Error(`pid ${pid}: answered no request in 20 s under callgrind`);
    warmed += chunk;
  }
  console.log(`  pid ${pid}: warmed up with ${warmed} requests`);
  execFileSync('callgrind_control', ['--zero', String(pid)], { stdio: 'ignore' });
  const run = await wrk(COUNTED.durationS);
  execFileSync('callgrind_control', ['--dump', String(pid)], { stdio: 'ignore' });
  // The dump on request is callgrind.<pid>.1 (the one at exit, without the suffix, comes later).
  const dump = path.join(outDir, `callgrind.${pid}.1`);
  const total = existsSync(dump) ? callgrindTotal(readFileSync(dump, 'utf8')) : undefined;
  if (total === undefined) throw new Error(`pid ${pid}: callgrind wrote no dump with a total`);
  if (run.requests === 0) throw new Error(`pid ${pid}: no request answered under callgrind`);
  return { instructionsPerRequest: Math.round(total / run.requests), errors: wrkErrors(run) };
}

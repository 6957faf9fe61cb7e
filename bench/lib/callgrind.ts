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
import { fileURLToPath } from 'node:url';
import { runWrk, wrkErrors } from './wrk.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The total of a callgrind output file (`summary:` or `totals:` line), or undefined. */
export function callgrindTotal(text: string): number | undefined {
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  return m === null ? undefined : Number(m[1]);
}

/** valgrind installed from Debian when missing, and its version; undefined when it cannot be had. */
export function valgrindVersion(): string | undefined {
  try {
    execFileSync(path.join(repoRoot, 'scripts', 'ensure-system-deps.sh'), ['valgrind:valgrind'], {
      stdio: 'inherit',
    });
    return execFileSync('valgrind', ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
}

export interface CountOptions {
  readonly name: string;
  /** The front's process, started under `valgrind --tool=callgrind --callgrind-out-file=<outDir>/<name>.%p`. */
  readonly pid: number;
  readonly url: string;
  readonly outDir: string;
  readonly warmupRequests: number;
  readonly durationS: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly log: (line: string) => void;
}

export interface InstructionCount {
  readonly requests: number;
  readonly instructions: number;
  readonly instructionsPerRequest: number;
  readonly errors: number;
}

/** Warms a front up by request count, zeroes its counters, drives it with wrk (50 connections) for durationS: instructions per request answered. */
export async function countInstructions(o: CountOptions): Promise<InstructionCount> {
  let warmed = 0;
  while (warmed < o.warmupRequests) {
    const chunk = (
      await runWrk({ url: o.url, connections: 50, threads: 1, durationS: 20, headers: o.headers })
    ).requests;
    if (chunk === 0) throw new Error(`${o.name}: answered no request in 20 s under callgrind`);
    warmed += chunk;
  }
  o.log(`  ${o.name}: warmed up with ${warmed} requests`);
  execFileSync('callgrind_control', ['--zero', String(o.pid)], { stdio: 'ignore' });
  const wrk = await runWrk({
    url: o.url,
    connections: 50,
    threads: 1,
    durationS: o.durationS,
    headers: o.headers,
  });
  execFileSync('callgrind_control', ['--dump', String(o.pid)], { stdio: 'ignore' });
  // The dump on request is <name>.<pid>.1 (the one at exit, without the suffix, comes later).
  const dump = path.join(o.outDir, `${o.name}.${o.pid}.1`);
  const total = existsSync(dump) ? callgrindTotal(readFileSync(dump, 'utf8')) : undefined;
  if (total === undefined)
    throw new Error(`${o.name}: callgrind wrote no dump with a total in ${o.outDir}`);
  if (wrk.requests === 0) throw new Error(`${o.name}: no request answered under callgrind`);
  return {
    requests: wrk.requests,
    instructions: total,
    instructionsPerRequest: Math.round(total / wrk.requests),
    errors: wrkErrors(wrk),
  };
}

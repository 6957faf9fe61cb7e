// What the suites and bench/tools/ab.ts share to run: interleaved rounds, workers, the Debian
// packages they need, and the writing of a result. Rounds, because this shared machine's host
// drifts by a third within a minute: the things compared run in many short interleaved rounds,
// each round starting one later than the last (the cyclic order stays, so neighbours stay
// neighbours; with two the order flips), and ratios are taken within a round.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../test/harness/programs.ts';

/** `rounds` rounds of `measure` over `items`; each item's results in round order, in the order of `items`. */
export async function interleave<I, T>(
  items: readonly I[],
  rounds: number,
  measure: (item: I, round: number) => Promise<T>,
): Promise<T[][]> {
  const out = items.map((): T[] => []);
  for (let round = 0; round < rounds; round++)
    for (let k = 0; k < items.length; k++) {
      const i = (k + round) % items.length;
      out[i]?.push(await measure(items[i] as I, round + 1));
    }
  return out;
}

/** f(a's, b's) of each round both have. */
export function perRound<T>(a: readonly T[], b: readonly T[], f: (x: T, y: T) => number): number[] {
  return a.flatMap((x, i) => (i < b.length ? [f(x, b[i] as T)] : []));
}

/** Runs one(0..n-1), `concurrency` at a time; the results in index order. */
export async function pool<T>(n: number, concurrency: number, one: (i: number) => Promise<T>) {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await one(i);
      }
    }),
  );
  return out;
}

/** Writes a suite's result as `<name>.json` and its Markdown as `<name>.md` into `dir`, and says so. */
export function writeResult(dir: string, name: string, result: unknown, md: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(dir, `${name}.md`), `${md}\n`);
  console.log(`\n${md}\n\nwritten: bench/results/${name}.json, bench/results/${name}.md`);
}

/** Installs the Debian packages of the `binary:package` pairs whose binary is missing. */
export function ensureSystemDeps(...pairs: string[]): void {
  execFileSync(path.join(repoRoot, 'scripts', 'ensure-system-deps.sh'), pairs, {
    stdio: 'inherit',
    env: { ...process.env, PATH: `${process.env['PATH'] ?? ''}:/usr/sbin:/sbin` },
  });
}

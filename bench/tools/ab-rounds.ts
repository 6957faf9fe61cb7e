// A and B taking turns in rounds (bench/tools/ab.ts), and the per-round comparison of the two.
import { median, r2 } from '../lib/measure.ts';

/** The median of `xs` [lowest-highest]. */
export const spread = (xs: number[]) =>
  `${r2(median(xs))} [${r2(Math.min(...xs))}-${r2(Math.max(...xs))}]`;

/**
 * `times` rounds of `measure` on A and on B, the order flipping each round (the host drifts
 * within a minute); answers each side's results in round order. `report` sees each round (from 1).
 */
export async function alternate<S, T>(
  a: S,
  b: S,
  measure: (s: S) => Promise<T>,
  report: (round: number, ga: T, gb: T) => void,
  times: number,
): Promise<[T[], T[]]> {
  const out: [T[], T[]] = [[], []];
  for (let r = 0; r < times; r++) {
    const [first, second] = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of [first, second] as (0 | 1)[]) out[i].push(await measure(i === 0 ? a : b));
    report(r + 1, out[0][r] as T, out[1][r] as T);
  }
  return out;
}

/** f(A's, B's) of each round. */
export const perRound = <T>([xa, xb]: [T[], T[]], f: (ga: T, gb: T) => number): number[] =>
  xa.map((ga, r) => f(ga, xb[r] as T));

// Exponential backoff with a cap and jitter: delay(n) = min(baseMs * 2^n, maxMs) * (1 +- jitter).

export interface BackoffPolicy {
  /** First delay, ms. */
  baseMs: number;
  /** Largest delay, ms. */
  maxMs: number;
  /** 0..1: fraction of the delay randomised (spreads the retries of many objects). */
  jitter?: number;
}

export function backoffDelay(
  policy: BackoffPolicy,
  failures: number,
  random: () => number = Math.random,
): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(failures, 0), 30));
  const jitter = policy.jitter ?? 0;
  return Math.round(exp * (1 - jitter + 2 * jitter * random()));
}

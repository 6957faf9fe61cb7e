// Request bodies each key has arriving (from the limiter decision until the body ended or the
// response closed), so that one key cannot hold every upstream connection: a slow upload holds its
// connection for as long as its body trickles in, and the token bucket only counts requests as
// they start.
// One Map entry per key with a request in flight, none when the bound is off.

export class KeyInFlight {
  readonly #counts = new Map<string, number>();

  /** Counts one more request of `key` unless it already has `max` in flight (then false). */
  acquire(key: string, max: number): boolean {
    const n = this.#counts.get(key) ?? 0;
    if (n >= max) return false;
    this.#counts.set(key, n + 1);
    return true;
  }

  /** Ends one request of `key` counted by acquire(). */
  release(key: string): void {
    const n = this.#counts.get(key);
    if (n === undefined) return;
    if (n <= 1) this.#counts.delete(key);
    else this.#counts.set(key, n - 1);
  }

  /** Keys with a request in flight (for tests). */
  get size(): number {
    return this.#counts.size;
  }
}

/**
 * The bound one key gets: `maxInFlightPerKey`, and at most a quarter of the upstream connections
 * (rounded up), so that one key leaves three quarters of the pool to the others. 0: no bound.
 */
export function keyInFlightBound(maxInFlightPerKey: number, connections: number): number {
  if (maxInFlightPerKey === 0) return 0;
  return Math.min(maxInFlightPerKey, Math.ceil(connections / 4));
}

// The BucketStore port: where bucket state lives. memory.ts is the embedded default for one
// process; redis.ts shares state between many processes. Independent of HTTP, so the auth
// server's sign-in throttle uses the same stores.
import type { BucketRule, Decision } from './bucket.ts';

/**
 * Receives the outcome of one take(): exactly one of the two is called, once. Neither may
 * throw (a store settles a whole batch in one loop; a sink that throws is its own bug).
 */
export interface TakeSink {
  taken(decision: Decision): void;
  /** The store could not decide (StoreUnavailableError, or a RangeError for an invalid rule). */
  failed(err: Error): void;
}

export interface BucketStore {
  /**
   * Atomically refills the buckets named after `key` (one per rule) and takes each its cost
   * (costs[i] tokens from bucket i) when every one holds it; a refusal charges none. The decision
   * is the most constraining bucket's, with each bucket's in `limits` when there are several
   * (bucket.ts takeAllUs). The outcome goes to `sink`, possibly before take returns (the memory
   * store decides at once): no promise, no microtask on the gateway's hot path. `failed` hears of
   * a store unreachable or slower than its timeout (StoreUnavailableError; callers decide the
   * failure policy) and of invalid rules (RangeError). take-promise.ts has the promise forms.
   */
  take(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void;
  /**
   * Limits changed (a reload): every stored bucket whose key starts with `keyPrefix` keeps its
   * state for at least ttlsMs[i] from now (bucket i of a take; bucket.ts bucketTtlMs of the new
   * limits), so that no key written under the old limits expires, and reads as full, before the
   * new limits would have refilled it. Only lengthens. Resolves with the number of keys seen.
   */
  retain?(keyPrefix: string, ttlsMs: readonly number[]): Promise<number>;
  /** Resolves once the store can answer (immediately for memory). */
  ready(): Promise<void>;
  /** True while the store can answer (for readiness probes). */
  isReady(): boolean;
  close(): Promise<void>;
}

/** The store could not answer in time; the bucket state is unknown. */
export class StoreUnavailableError extends Error {
  readonly code = 'ERR_STORE_UNAVAILABLE';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

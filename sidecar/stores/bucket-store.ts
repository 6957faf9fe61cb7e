// The BucketStore port: where bucket state lives. memory.ts is the embedded default for one
// process; redis.ts shares state between many processes. Independent of HTTP, so the auth
// server's sign-in throttle uses the same stores.
import type { BucketRule, Decision } from '../bucket.ts';

export interface BucketStore {
  /**
   * Atomically refills the bucket named `key`, then takes `cost` tokens (default
   * rule.requestedTokens) when it holds enough. Rejects when the store is unreachable or slower
   * than its timeout (StoreUnavailableError); callers decide the failure policy.
   */
  take(key: string, rule: BucketRule, cost?: number): Promise<Decision>;
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

// In-memory BucketStore: the embedded default for a single process (make run, tests). The clock
// is injected (ms, may be fractional); idle buckets are forgotten once they would be full again.
import { assertRule, bucketTtlMs, takeUs, type BucketRule, type BucketState, type Decision } from '../bucket.ts';
import type { BucketStore, TakeSink } from './bucket-store.ts';

export interface MemoryStoreOptions {
  /** Current time in ms (e.g. performance.timeOrigin + performance.now()). */
  readonly now: () => number;
  /** How often idle buckets are swept, ms (0 disables the timer). Default 10 s. */
  readonly sweepIntervalMs?: number;
}

interface Entry {
  state: BucketState;
  /** µs after which the entry may be dropped (state time + key TTL). */
  expiresUs: number;
}

export class MemoryBucketStore implements BucketStore {
  readonly #now: () => number;
  readonly #buckets = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout | undefined;

  constructor(options: MemoryStoreOptions) {
    this.#now = options.now;
    const every = options.sweepIntervalMs ?? 10_000;
    if (every > 0) {
      this.#timer = setInterval(() => this.sweep(), every);
      this.#timer.unref();
    }
  }

  async take(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Promise<Decision> {
    return this.takeSync(key, rule, cost);
  }

  takeInto(key: string, rule: BucketRule, cost: number, sink: TakeSink): void {
    let decision: Decision;
    try {
      decision = this.takeSync(key, rule, cost);
    } catch (err) {
      sink.failed(err as Error);
      return;
    }
    sink.taken(decision);
  }

  /** Synchronous form (no promise) for callers on a hot path. */
  takeSync(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Decision {
    assertRule(rule, cost);
    const nowUs = Math.round(this.#now() * 1000);
    const entry = this.#buckets.get(key);
    const prior = entry !== undefined && entry.expiresUs > nowUs ? entry.state : undefined;
    const { decision, state } = takeUs(prior, rule, nowUs, cost);
    const expiresUs = state.updatedUs + bucketTtlMs(rule) * 1000;
    if (entry === undefined) this.#buckets.set(key, { state, expiresUs });
    else {
      entry.state = state;
      entry.expiresUs = expiresUs;
    }
    return decision;
  }

  /** Drops buckets whose TTL passed (they would be full again anyway). */
  sweep(): void {
    const nowUs = Math.round(this.#now() * 1000);
    for (const [key, entry] of this.#buckets) if (entry.expiresUs <= nowUs) this.#buckets.delete(key);
  }

  /** Number of buckets held (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  async ready(): Promise<void> {}

  isReady(): boolean {
    return true;
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#buckets.clear();
  }
}

// In-memory BucketStore: the embedded default for a single process (make run, tests). The clock
// is injected (ms, may be fractional); idle buckets are forgotten once they would be full again.
// Like the Redis store it writes a bucket only when a take is admitted (bucket.ts, "What a store
// keeps"), expiry included, so both stores decide alike.
import { assertRule, bucketTtlMs, takeAllUs, takeUs, type BucketRule, type BucketState, type Decision } from './bucket.ts';
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
    if (!decision.allowed) return decision;
    const expiresUs = state.updatedUs + bucketTtlMs(rule) * 1000;
    if (entry === undefined) this.#buckets.set(key, { state, expiresUs });
    else {
      entry.state = state;
      entry.expiresUs = expiresUs;
    }
    return decision;
  }

  async takeAll(key: string, rules: readonly BucketRule[], costs: readonly number[] = rules.map((r) => r.requestedTokens)): Promise<Decision> {
    return this.takeAllSync(key, rules, costs);
  }

  takeAllInto(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void {
    let decision: Decision;
    try {
      decision = this.takeAllSync(key, rules, costs);
    } catch (err) {
      sink.failed(err as Error);
      return;
    }
    sink.taken(decision);
  }

  /**
   * Synchronous takeAll. Bucket i > 0 of a take is stored under key + NUL + i: keys never hold a
   * NUL, so no other key can name it.
   */
  takeAllSync(key: string, rules: readonly BucketRule[], costs: readonly number[]): Decision {
    if (rules.length === 1) return this.takeSync(key, rules[0] as BucketRule, costs[0]);
    if (rules.length === 0 || rules.length !== costs.length) throw new RangeError('a take needs one cost per rule, and at least one rule');
    for (let i = 0; i < rules.length; i++) assertRule(rules[i] as BucketRule, costs[i] as number);
    const nowUs = Math.round(this.#now() * 1000);
    const names = rules.map((_, i) => (i === 0 ? key : `${key}\u0000${i}`));
    const prior = names.map((name) => {
      const entry = this.#buckets.get(name);
      return entry !== undefined && entry.expiresUs > nowUs ? entry.state : undefined;
    });
    const { decision, states } = takeAllUs(prior, rules, nowUs, costs);
    if (!decision.allowed) return decision;
    for (let i = 0; i < names.length; i++) {
      const state = states[i] as BucketState;
      this.#buckets.set(names[i] as string, { state, expiresUs: state.updatedUs + bucketTtlMs(rules[i] as BucketRule) * 1000 });
    }
    return decision;
  }

  async retain(keyPrefix: string, ttlsMs: readonly number[]): Promise<number> {
    const nowUs = Math.round(this.#now() * 1000);
    let seen = 0;
    for (const [name, entry] of this.#buckets) {
      if (!name.startsWith(keyPrefix) || entry.expiresUs <= nowUs) continue;
      // Bucket i > 0 of a take is key + NUL + i (takeAllSync).
      const nul = name.indexOf('\u0000', keyPrefix.length);
      const ttlMs = ttlsMs[nul < 0 ? 0 : Number(name.slice(nul + 1))];
      if (ttlMs === undefined) continue;
      entry.expiresUs = Math.max(entry.expiresUs, nowUs + ttlMs * 1000);
      seen++;
    }
    return seen;
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

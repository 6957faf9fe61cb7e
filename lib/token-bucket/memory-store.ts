// In-memory BucketStore: the embedded default for a single process (make run, tests). The clock
// is injected (ms, may be fractional); idle buckets are forgotten once they would be full again.
// Like the Redis store it writes a bucket only when a take is admitted (bucket.ts, "What a store
// keeps"), expiry included, so both stores decide alike.
//
// Bounded (maxBuckets, maxBytes): a store at its bound makes room by forgetting buckets that have
// refilled to full by now (a forgotten bucket reads as full, so forgetting one changes no
// decision). When none has, a take that would add a bucket is refused (a limited decision whose
// Retry-After is the time until one will have), never admitted as if its bucket were full: the
// bound costs availability for new keys, never accuracy for known ones.
import {
  assertRule,
  bucketTtlMs,
  combineDecisions,
  refillWaitUs,
  takeAllUs,
  takeUs,
  type BucketRule,
  type BucketState,
  type Decision,
} from './bucket.ts';
import type { BucketStore, TakeSink } from './bucket-store.ts';

export interface MemoryStoreOptions {
  /** Current time in ms (e.g. performance.timeOrigin + performance.now()). */
  readonly now: () => number;
  /** How often idle buckets are swept, ms (0 disables the timer). Default 10 s. */
  readonly sweepIntervalMs?: number;
  /** Buckets held at most (0 = no bound). */
  readonly maxBuckets?: number;
  /** Estimated heap bytes of the buckets held at most (entryBytes; 0 = no bound). */
  readonly maxBytes?: number;
  /** Buckets forgotten to make room (each had refilled to full). */
  readonly onEvicted?: (count: number) => void;
  /** A take refused because the store was at its bound and no bucket could be forgotten. */
  readonly onRefusedFull?: () => void;
}

/**
 * Heap bytes one bucket costs besides its key's characters: the Map slot, the entry and its state
 * (measured with 10^5 distinct flat keys: ~220 bytes plus one a character; rounded up).
 */
export const ENTRY_OVERHEAD_BYTES = 240;

/** Estimated heap bytes of the bucket named `key`: two bytes a character covers any string V8 holds. */
export function entryBytes(key: string): number {
  return ENTRY_OVERHEAD_BYTES + 2 * key.length;
}

/** Least time between two passes looking for buckets to forget while at the bound (ms): each is O(buckets). */
const FORGET_PASS_GAP_MS = 100;

interface Entry {
  state: BucketState;
  /** µs after which the entry may be dropped (state time + key TTL). */
  expiresUs: number;
  /** µs from which the bucket is full again: forgetting it from then on changes no decision. */
  fullUs: number;
}

/** µs at which `state` is full again under `rule`. */
function fullAtUs(state: BucketState, rule: BucketRule): number {
  return state.updatedUs + refillWaitUs(state.microTokens, rule, rule.burstCapacity);
}

export class MemoryBucketStore implements BucketStore {
  readonly #now: () => number;
  readonly #buckets = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #maxBuckets: number;
  readonly #maxBytes: number;
  readonly #onEvicted: ((count: number) => void) | undefined;
  readonly #onRefusedFull: (() => void) | undefined;
  /** Sum of entryBytes over the buckets held. */
  #bytes = 0;
  /** Earliest fullUs of any bucket held (a lower bound): no pass can forget anything before it. */
  #nextFullUs = 0;
  /** When the last forget pass ran (µs). */
  #lastPassUs = Number.NEGATIVE_INFINITY;

  constructor(options: MemoryStoreOptions) {
    this.#now = options.now;
    this.#maxBuckets = options.maxBuckets ?? 0;
    this.#maxBytes = options.maxBytes ?? 0;
    this.#onEvicted = options.onEvicted;
    this.#onRefusedFull = options.onRefusedFull;
    const every = options.sweepIntervalMs ?? 10_000;
    if (every > 0) {
      this.#timer = setInterval(() => this.sweep(), every);
      this.#timer.unref();
    }
  }

  /** Synchronous form (no promise) for callers on a hot path. */
  takeSync(key: string, rule: BucketRule, cost: number = rule.requestedTokens): Decision {
    assertRule(rule, cost);
    const nowUs = Math.round(this.#now() * 1000);
    const entry = this.#buckets.get(key);
    const prior = entry !== undefined && entry.expiresUs > nowUs ? entry.state : undefined;
    const { decision, state } = takeUs(prior, rule, nowUs, cost);
    if (!decision.allowed) return decision;
    if (entry === undefined && !this.#roomFor(1, entryBytes(key), nowUs))
      return this.#refusedFull([rule], [cost], nowUs);
    this.#write(key, entry, state, rule);
    return decision;
  }

  take(key: string, rules: readonly BucketRule[], costs: readonly number[], sink: TakeSink): void {
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
   * Synchronous take. Bucket i > 0 of a take is stored under key + NUL + i: keys never hold a
   * NUL, so no other key can name it.
   */
  takeAllSync(key: string, rules: readonly BucketRule[], costs: readonly number[]): Decision {
    if (rules.length === 1) return this.takeSync(key, rules[0] as BucketRule, costs[0]);
    if (rules.length === 0 || rules.length !== costs.length)
      throw new RangeError('a take needs one cost per rule, and at least one rule');
    for (let i = 0; i < rules.length; i++) assertRule(rules[i] as BucketRule, costs[i] as number);
    const nowUs = Math.round(this.#now() * 1000);
    const names = rules.map((_, i) => (i === 0 ? key : `${key}\u0000${i}`));
    const entries = names.map((name) => this.#buckets.get(name));
    const prior = entries.map((entry) =>
      entry !== undefined && entry.expiresUs > nowUs ? entry.state : undefined,
    );
    const { decision, states } = takeAllUs(prior, rules, nowUs, costs);
    if (!decision.allowed) return decision;
    let added = 0;
    let addedBytes = 0;
    for (let i = 0; i < names.length; i++) {
      if (entries[i] !== undefined) continue;
      added++;
      addedBytes += entryBytes(names[i] as string);
    }
    if (added > 0) {
      if (!this.#roomFor(added, addedBytes, nowUs)) return this.#refusedFull(rules, costs, nowUs);
      // Making room may have forgotten a full bucket of this very take: write it anew then.
      for (let i = 0; i < names.length; i++)
        if (entries[i] !== undefined) entries[i] = this.#buckets.get(names[i] as string);
    }
    for (let i = 0; i < names.length; i++)
      this.#write(names[i] as string, entries[i], states[i] as BucketState, rules[i] as BucketRule);
    return decision;
  }

  /** Stores an admitted take's state: in place when the bucket is held, else as a new entry. */
  #write(key: string, entry: Entry | undefined, state: BucketState, rule: BucketRule): void {
    const expiresUs = state.updatedUs + bucketTtlMs(rule) * 1000;
    const fullUs = fullAtUs(state, rule);
    if (fullUs < this.#nextFullUs) this.#nextFullUs = fullUs;
    if (entry === undefined) {
      this.#add(key, { state, expiresUs, fullUs });
      return;
    }
    entry.state = state;
    entry.expiresUs = expiresUs;
    entry.fullUs = fullUs;
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
      // Under slower limits the bucket refills later than its old fullUs: keep it until it expires.
      entry.fullUs = Math.max(entry.fullUs, entry.expiresUs);
      seen++;
    }
    return seen;
  }

  /** Drops buckets whose TTL passed (they would be full again anyway). */
  sweep(): void {
    const nowUs = Math.round(this.#now() * 1000);
    for (const [key, entry] of this.#buckets) if (entry.expiresUs <= nowUs) this.#delete(key);
  }

  #add(key: string, entry: Entry): void {
    this.#buckets.set(key, entry);
    this.#bytes += entryBytes(key);
  }

  #delete(key: string): void {
    if (this.#buckets.delete(key)) this.#bytes -= entryBytes(key);
  }

  #fits(count: number, bytes: number): boolean {
    return (
      (this.#maxBuckets === 0 || this.#buckets.size + count <= this.#maxBuckets) &&
      (this.#maxBytes === 0 || this.#bytes + bytes <= this.#maxBytes)
    );
  }

  /**
   * Whether `count` more buckets of `bytes` fit, after forgetting the buckets that are full by
   * now when they do not. A pass walks every bucket, so it runs only when one may have refilled
   * (#nextFullUs) and at most every FORGET_PASS_GAP_MS; in between, new keys are refused.
   */
  #roomFor(count: number, bytes: number, nowUs: number): boolean {
    if (this.#fits(count, bytes)) return true;
    if (nowUs < this.#nextFullUs || nowUs - this.#lastPassUs < FORGET_PASS_GAP_MS * 1000)
      return false;
    this.#lastPassUs = nowUs;
    let forgotten = 0;
    let next = Number.POSITIVE_INFINITY;
    for (const [key, entry] of this.#buckets) {
      if (entry.fullUs <= nowUs) {
        this.#delete(key);
        forgotten++;
      } else if (entry.fullUs < next) next = entry.fullUs;
    }
    this.#nextFullUs = next;
    if (forgotten > 0) this.#onEvicted?.(forgotten);
    return this.#fits(count, bytes);
  }

  /** The refusal of a take that found no room: Retry-After until a bucket may be forgotten. */
  #refusedFull(rules: readonly BucketRule[], costs: readonly number[], nowUs: number): Decision {
    this.#onRefusedFull?.();
    const waitUs = Math.max(
      this.#nextFullUs - nowUs,
      this.#lastPassUs + FORGET_PASS_GAP_MS * 1000 - nowUs,
      1000,
    );
    const retryAfterMs = Number.isFinite(waitUs) ? Math.ceil(waitUs / 1000) : 1000;
    return combineDecisions(
      rules.map((rule, i) => ({
        allowed: false,
        remaining: 0,
        limit: rule.burstCapacity,
        cost: costs[i] ?? rule.requestedTokens,
        retryAfterMs,
        resetMs: 0,
      })),
    );
  }

  /** Number of buckets held (for tests and metrics). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Estimated heap bytes of the buckets held (entryBytes). */
  get bytes(): number {
    return this.#bytes;
  }

  async ready(): Promise<void> {}

  isReady(): boolean {
    return true;
  }

  async close(): Promise<void> {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#buckets.clear();
    this.#bytes = 0;
  }
}

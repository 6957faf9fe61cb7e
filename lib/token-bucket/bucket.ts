// Token-bucket math: a pure function, no clock of its own.
//
// Units: time in integer microseconds (µs) inside, token counts in integer micro-tokens
// (1 token = 1_000_000 micro-tokens). Because replenishRate is an integer number of tokens per
// second, a bucket regains exactly `replenishRate` micro-tokens per µs, so every value stays an
// integer below 2^53 and the arithmetic is exact in JavaScript and in Redis' Lua (both IEEE
// doubles). lib/token-bucket/token-bucket.lua performs the very same operations in the same order;
// test/integration/sidecar-lua-equivalence.test.ts requires identical results.
//
// What a store keeps: a take returns the bucket's state as of its decision (refilled to its time,
// charged when admitted), and a store writes it only when the take is admitted. A refused take
// writes nothing, which spares Redis a write on every refusal, and changes no later decision
// while the clock runs forwards: from a stored (tokens t0 at ts0), the refused take at `now`
// computes t1 = min(cap, t0 + (now - ts0) x rate) (or cap once a full refill time passed); at any
// later time L >= now, refilling (t1 at now) gives min(cap, t1 + (L - now) x rate) = min(cap, t0 +
// (L - ts0) x rate), exactly what refilling (t0 at ts0) gives, because the arithmetic is exact
// integer addition capped at cap (test/unit/property-bucket.test.ts checks it for any sequence).
// The key's TTL set by the last write still holds: the bucket it left is full by then, under the
// limits it was written with; a reload to limits that refill more slowly lengthens the stored keys'
// TTL to theirs (BucketStore.retain), so the same holds under the new ones.
// Where it differs: after a clock that goes backwards past a refusal (a Redis failover to a
// replica whose clock is behind), the next take refills from the stored time rather than from the
// refusal's, so it sees fewer tokens than a written refusal would have left; the bound
// (burstCapacity + replenishRate x elapsed) holds either way. And after a rule change (hot reload)
// the time since the last admitted take refills at the new rate, where a written refusal would
// have fixed it at the old one up to then.

/** One limit: what the specification calls redis-rate-limiter.* on a route. */
export interface BucketRule {
  /** Tokens restored per second (integer >= 1). */
  readonly replenishRate: number;
  /** Maximum tokens the bucket holds (integer >= 1); a new bucket starts full. */
  readonly burstCapacity: number;
  /** Tokens one request costs by default (integer, 1..burstCapacity). */
  readonly requestedTokens: number;
}

/** Stored state of one bucket. */
export interface BucketState {
  /** Tokens in the bucket at `updatedUs`, in micro-tokens (integer). */
  readonly microTokens: number;
  /** When the state was computed, in µs on the store's clock (integer). */
  readonly updatedUs: number;
}

export interface Decision {
  /** True when the bucket held at least `cost` tokens; they were taken. */
  readonly allowed: boolean;
  /** Whole tokens left after this decision (floor). */
  readonly remaining: number;
  /** burstCapacity of the rule: the most tokens the bucket can hold. */
  readonly limit: number;
  /** Tokens this request cost (or would have cost when limited). */
  readonly cost: number;
  /** When limited: ms until the bucket holds `cost` tokens (ceil); 0 when allowed. */
  readonly retryAfterMs: number;
  /** ms until the bucket is full again (ceil); 0 when already full. */
  readonly resetMs: number;
  /**
   * Several limits on one request: each bucket's own decision, in the rule's order (their
   * `allowed` is the request's). Absent for a single limit, whose decision is the one above.
   */
  readonly limits?: readonly Decision[];
}

export interface TakeResult {
  readonly decision: Decision;
  /** The bucket as of the decision: refilled to its time, charged when admitted. Stores write it only when admitted. */
  readonly state: BucketState;
}

export const MICRO = 1_000_000;

/** Largest burstCapacity the exact integer arithmetic supports (capacity in micro-tokens < 2^53). */
export const MAX_BURST_CAPACITY = 1_000_000_000;

/** µs for an empty bucket to fill up completely (ceil). */
export function fillTimeUs(rule: BucketRule): number {
  return Math.ceil((rule.burstCapacity * MICRO) / rule.replenishRate);
}

/**
 * Safety factor on the key TTL: a key outlives the time an empty bucket needs to refill, so an
 * expired key and a full bucket mean the same thing (an idle bucket's state is simply forgotten).
 */
export const TTL_SAFETY_FACTOR = 2;

/** TTL of a bucket's key in ms: refill-from-empty time x safety factor, at least 1 s. */
export function bucketTtlMs(rule: BucketRule): number {
  return Math.max(1000, Math.ceil((fillTimeUs(rule) / 1000) * TTL_SAFETY_FACTOR));
}

/** Throws a RangeError when the rule or cost is outside what the exact arithmetic supports. */
export function assertRule(rule: BucketRule, cost: number): void {
  const ok =
    Number.isInteger(rule.replenishRate) &&
    rule.replenishRate >= 1 &&
    Number.isInteger(rule.burstCapacity) &&
    rule.burstCapacity >= 1 &&
    rule.burstCapacity <= MAX_BURST_CAPACITY &&
    Number.isInteger(cost) &&
    cost >= 0 &&
    cost <= rule.burstCapacity;
  if (!ok) {
    throw new RangeError(
      `invalid bucket rule: replenishRate ${rule.replenishRate}, burstCapacity ${rule.burstCapacity}, cost ${cost} ` +
        `(integers, rate >= 1, 1 <= capacity <= ${MAX_BURST_CAPACITY}, 0 <= cost <= capacity)`,
    );
  }
}

/**
 * Check-and-take at `nowUs` (integer µs). A missing state is a full bucket. A clock that went
 * backwards (e.g. a Redis failover) refills nothing and never moves the state's time back.
 */
export function takeUs(
  state: BucketState | undefined,
  rule: BucketRule,
  nowUs: number,
  cost: number,
): TakeResult {
  const need = cost * MICRO;
  let tokens = tokensAt(state, rule, nowUs);
  const allowed = tokens >= need;
  if (allowed) tokens -= need;
  return {
    decision: toDecision(allowed, tokens, rule, cost),
    state: { microTokens: tokens, updatedUs: stateTimeUs(state, nowUs) },
  };
}

/**
 * The refill, the one place it is written (token-bucket.lua has its twin): the micro-tokens of a
 * bucket that held `microTokens`, `elapsedUs` (integer >= 0) later, at most its capacity. Elapsed
 * is capped at the fill time before multiplying, so elapsed x rate stays exact.
 */
export function refilledUs(microTokens: number, rule: BucketRule, elapsedUs: number): number {
  const capacity = rule.burstCapacity * MICRO;
  return elapsedUs >= fillTimeUs(rule)
    ? capacity
    : Math.min(capacity, microTokens + elapsedUs * rule.replenishRate);
}

/**
 * Micro-tokens of the bucket `state` at `nowUs`: a missing state is a full bucket; a clock behind
 * the state's time (e.g. a Redis failover) refills nothing.
 */
function tokensAt(state: BucketState | undefined, rule: BucketRule, nowUs: number): number {
  if (state === undefined) return rule.burstCapacity * MICRO;
  return refilledUs(state.microTokens, rule, nowUs > state.updatedUs ? nowUs - state.updatedUs : 0);
}

/** The time of a state computed at `nowUs` from `state`: never before the state's own (a clock that went backwards). */
function stateTimeUs(state: BucketState | undefined, nowUs: number): number {
  return state !== undefined && nowUs < state.updatedUs ? state.updatedUs : nowUs;
}

/**
 * The shape other helpers use: time in ms (fractions allowed down to 1 µs). `cost` defaults to
 * the rule's requestedTokens.
 */
export function take(
  state: BucketState | undefined,
  rule: BucketRule,
  nowMs: number,
  cost: number = rule.requestedTokens,
): TakeResult {
  assertRule(rule, cost);
  return takeUs(state, rule, Math.round(nowMs * 1000), cost);
}

/** µs until a bucket holding `microTokens` holds `cost` tokens (ceil); 0 when it already does. */
export function refillWaitUs(microTokens: number, rule: BucketRule, cost: number): number {
  const need = cost * MICRO;
  return microTokens >= need ? 0 : Math.ceil((need - microTokens) / rule.replenishRate);
}

/**
 * One bucket's public decision from the take's outcome and the micro-tokens the bucket holds after
 * it (shared with the Redis store, whose script answers just these). The waits are exact in µs,
 * then rounded up to ms: Retry-After until this bucket holds `cost` (0 when admitted, or when this
 * bucket held its cost and another refused), reset until it is full.
 */
export function toDecision(
  allowed: boolean,
  microTokens: number,
  rule: BucketRule,
  cost: number,
): Decision {
  const retryAfterUs = allowed ? 0 : refillWaitUs(microTokens, rule, cost);
  const resetUs = Math.ceil((rule.burstCapacity * MICRO - microTokens) / rule.replenishRate);
  return {
    allowed,
    remaining: Math.floor(microTokens / MICRO),
    limit: rule.burstCapacity,
    cost,
    retryAfterMs: Math.ceil(retryAfterUs / 1000),
    resetMs: Math.ceil(resetUs / 1000),
  };
}

export interface MultiTakeResult {
  /** The request's decision: that of its most constraining bucket, with `limits` when several. */
  readonly decision: Decision;
  /** Each bucket as of the decision, in the order of the rules (refilled, charged when admitted). Stores write them only when admitted. */
  readonly states: readonly BucketState[];
}

/**
 * Check-and-take on several buckets at once (several limits on one request) at `nowUs`: the
 * request is admitted only when every bucket holds its cost, and then every bucket is charged; a
 * refusal charges none and is not written (see "What a store keeps" above). With one rule this is
 * takeUs.
 */
export function takeAllUs(
  states: readonly (BucketState | undefined)[],
  rules: readonly BucketRule[],
  nowUs: number,
  costs: readonly number[],
): MultiTakeResult {
  const n = rules.length;
  const tokens: number[] = [];
  const times: number[] = [];
  let allowed = true;
  for (let i = 0; i < n; i++) {
    const state = states[i];
    const t = tokensAt(state, rules[i] as BucketRule, nowUs);
    if (t < (costs[i] as number) * MICRO) allowed = false;
    tokens.push(t);
    times.push(stateTimeUs(state, nowUs));
  }
  const decisions: Decision[] = [];
  const after: BucketState[] = [];
  for (let i = 0; i < n; i++) {
    const cost = costs[i] as number;
    let t = tokens[i] as number;
    if (allowed) t -= cost * MICRO;
    decisions.push(toDecision(allowed, t, rules[i] as BucketRule, cost));
    after.push({ microTokens: t, updatedUs: times[i] as number });
  }
  return { decision: combineDecisions(decisions), states: after };
}

/**
 * The request's decision from its buckets' decisions (same `allowed` in all): when refused, the
 * bucket with the longest wait (Retry-After); when admitted, the one with the fewest tokens left.
 * One decision is returned as it is.
 */
export function combineDecisions(decisions: readonly Decision[]): Decision {
  let pick = decisions[0] as Decision;
  if (decisions.length === 1) return pick;
  for (let i = 1; i < decisions.length; i++) {
    const d = decisions[i] as Decision;
    if (pick.allowed ? d.remaining < pick.remaining : d.retryAfterMs > pick.retryAfterMs) pick = d;
  }
  return { ...pick, limits: decisions };
}

/**
 * Whether two takes charge the same limits the same costs: the same arrays (a route's, on the
 * sidecar's path), or equal rates, capacities and costs (take() makes new arrays every call).
 */
export function sameLimits(
  aRules: readonly BucketRule[],
  aCosts: readonly number[],
  bRules: readonly BucketRule[],
  bCosts: readonly number[],
): boolean {
  if (aRules === bRules && aCosts === bCosts) return true;
  const n = aRules.length;
  if (bRules.length !== n) return false;
  for (let i = 0; i < n; i++) {
    const x = aRules[i] as BucketRule;
    const y = bRules[i] as BucketRule;
    if (
      aCosts[i] !== bCosts[i] ||
      x.replenishRate !== y.replenishRate ||
      x.burstCapacity !== y.burstCapacity
    )
      return false;
  }
  return true;
}

// Property-based tests (fast-check) of the token-bucket math (lib/token-bucket/bucket.ts) and of the memory
// store built on it: for ANY rule, sequence of times (forwards, repeated, backwards) and costs,
// the bucket holds between 0 and burstCapacity tokens and never admits more than
// burstCapacity + replenishRate * elapsed tokens (elapsed = the span of the clock it has seen).
// An independent BigInt model of the same rules must take every decision the same way. The
// sequences keep a take's state only when it is admitted, as both stores do (bucket.ts, "What a
// store keeps"); while the clock runs forwards that decides exactly as keeping every state.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MICRO,
  take,
  takeAllUs,
  takeUs,
  type BucketRule,
  type BucketState,
} from '../../lib/token-bucket/bucket.ts';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import { recordCases } from '../harness/reliability-counts.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 400);

const ruleArb = fc
  .record({
    replenishRate: fc.integer({ min: 1, max: 100_000 }),
    burstCapacity: fc.integer({ min: 1, max: 1_000_000 }),
    requestedTokens: fc.integer({ min: 1, max: 1_000_000 }),
  })
  .map((r): BucketRule => ({
    ...r,
    requestedTokens: Math.min(r.requestedTokens, r.burstCapacity),
  }));

/** One request: time step (µs, may go backwards), cost as a fraction of the capacity. */
const stepArb = fc.record({
  dtUs: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 1, max: 1000 }),
    fc.integer({ min: 1, max: 5_000_000 }),
    fc.integer({ min: -2_000_000, max: -1 }), // clock went backwards (failover)
    fc.integer({ min: 1, max: 10_000_000_000 }), // hours idle
  ),
  costPermille: fc.integer({ min: 0, max: 1000 }),
});

const startArb = fc.integer({ min: 0, max: 2 ** 50 });

/** Reference model in BigInt: tokens in micro-tokens, refill rate micro-tokens per µs; `state` is the bucket as of the decision. */
function referenceTake(
  state: { tokens: bigint; at: bigint } | undefined,
  rule: BucketRule,
  now: bigint,
  cost: number,
) {
  const capacity = BigInt(rule.burstCapacity) * 1_000_000n;
  let tokens = capacity;
  let at = now;
  if (state !== undefined) {
    at = now < state.at ? state.at : now;
    const refill = (at - state.at) * BigInt(rule.replenishRate);
    tokens = state.tokens + refill > capacity ? capacity : state.tokens + refill;
  }
  const need = BigInt(cost) * 1_000_000n;
  const allowed = tokens >= need;
  if (allowed) tokens -= need;
  return { allowed, state: { tokens, at } };
}

describe('token bucket, for any sequence of times and costs', () => {
  it('holds between 0 and burstCapacity tokens and admits at most burstCapacity + replenishRate x elapsed', () => {
    fc.assert(
      fc.property(
        ruleArb,
        startArb,
        fc.array(stepArb, { minLength: 1, maxLength: 200 }),
        (rule, start, steps) => {
          recordCases('bucket property sequences', 1);
          let state: BucketState | undefined;
          let ref: { tokens: bigint; at: bigint } | undefined;
          let now = start;
          let first: number | undefined;
          let maxSeen = 0;
          let admittedMicro = 0n;
          for (const step of steps) {
            now = Math.max(0, now + step.dtUs);
            first ??= now;
            maxSeen = Math.max(maxSeen, now);
            const cost = Math.floor((rule.burstCapacity * step.costPermille) / 1000);
            const r = takeUs(state, rule, now, cost);
            const expected = referenceTake(ref, rule, BigInt(now), cost);
            // A refused take is not stored.
            if (expected.allowed) ref = expected.state;
            if (r.decision.allowed) state = r.state;
            // Same decision and same exact state as the independent model.
            expect(r.decision.allowed).toBe(expected.allowed);
            expect(BigInt(r.state.microTokens)).toBe(expected.state.tokens);
            // 0 <= tokens <= capacity, integers (exact arithmetic).
            expect(Number.isSafeInteger(r.state.microTokens)).toBe(true);
            expect(r.state.microTokens).toBeGreaterThanOrEqual(0);
            expect(r.state.microTokens).toBeLessThanOrEqual(rule.burstCapacity * MICRO);
            expect(r.decision.remaining).toBe(Math.floor(r.state.microTokens / MICRO));
            // The state's clock never moves back.
            expect(r.state.updatedUs).toBeLessThanOrEqual(maxSeen);
            if (r.decision.allowed) {
              admittedMicro += BigInt(cost) * 1_000_000n;
              expect(r.decision.retryAfterMs).toBe(0);
            } else {
              expect(r.decision.retryAfterMs).toBeGreaterThan(0);
            }
            // The bound, in micro-tokens: capacity + rate (micro-tokens per µs) x elapsed µs.
            const bound =
              BigInt(rule.burstCapacity) * 1_000_000n +
              BigInt(rule.replenishRate) * BigInt(maxSeen - first);
            expect(admittedMicro <= bound).toBe(true);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('several limits on one request: admitted only when every bucket holds its cost, then all charged; a refusal charges none; each bucket within its own bound', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArb, { minLength: 1, maxLength: 4 }),
        startArb,
        fc.array(stepArb, { minLength: 1, maxLength: 120 }),
        (rules, start, steps) => {
          recordCases('bucket property sequences', 1);
          let states: readonly (BucketState | undefined)[] = rules.map(() => undefined);
          let refs: ({ tokens: bigint; at: bigint } | undefined)[] = rules.map(() => undefined);
          let now = start;
          let first: number | undefined;
          let maxSeen = 0;
          const admitted = rules.map(() => 0n);
          for (const step of steps) {
            now = Math.max(0, now + step.dtUs);
            first ??= now;
            maxSeen = Math.max(maxSeen, now);
            const costs = rules.map((r) =>
              Math.floor((r.burstCapacity * step.costPermille) / 1000),
            );
            const r = takeAllUs(states, rules, now, costs);
            // The independent model: refill each bucket (no charge), admit only if all hold their cost, then charge all.
            const refilled = rules.map(
              (rule, i) => referenceTake(refs[i], rule, BigInt(now), 0).state,
            );
            const all = refilled.every(
              (st, i) => st.tokens >= BigInt(costs[i] as number) * 1_000_000n,
            );
            const after = refilled.map((st, i) =>
              all ? { tokens: st.tokens - BigInt(costs[i] as number) * 1_000_000n, at: st.at } : st,
            );
            if (all) refs = after;
            expect(r.decision.allowed).toBe(all);
            r.states.forEach((st, i) => {
              expect(BigInt(st.microTokens)).toBe(after[i]?.tokens);
              expect(BigInt(st.updatedUs)).toBe(after[i]?.at);
            });
            const each = r.decision.limits ?? [r.decision];
            expect(each).toHaveLength(rules.length);
            for (const d of each) expect(d.allowed).toBe(all);
            if (all) {
              expect(r.decision.retryAfterMs).toBe(0);
              expect(r.decision.remaining).toBe(Math.min(...each.map((d) => d.remaining)));
              rules.forEach(
                (_, i) =>
                  (admitted[i] = (admitted[i] as bigint) + BigInt(costs[i] as number) * 1_000_000n),
              );
            } else {
              // Retry-After is the longest wait among the refusing buckets, and it is enough for all.
              expect(r.decision.retryAfterMs).toBe(Math.max(...each.map((d) => d.retryAfterMs)));
              expect(r.decision.retryAfterMs).toBeGreaterThan(0);
            }
            if (r.decision.allowed) states = r.states;
            rules.forEach((rule, i) => {
              const bound =
                BigInt(rule.burstCapacity) * 1_000_000n +
                BigInt(rule.replenishRate) * BigInt(maxSeen - (first as number));
              expect((admitted[i] as bigint) <= bound).toBe(true);
            });
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('one limit through takeAllUs is takeUs', () => {
    fc.assert(
      fc.property(
        ruleArb,
        startArb,
        fc.array(stepArb, { minLength: 1, maxLength: 60 }),
        (rule, start, steps) => {
          let a: BucketState | undefined;
          let b: BucketState | undefined;
          let now = start;
          for (const step of steps) {
            now = Math.max(0, now + step.dtUs);
            const cost = Math.floor((rule.burstCapacity * step.costPermille) / 1000);
            const one = takeUs(a, rule, now, cost);
            const all = takeAllUs([b], [rule], now, [cost]);
            expect(all.decision).toEqual(one.decision);
            expect(all.states).toEqual([one.state]);
            if (one.decision.allowed) a = one.state;
            if (all.decision.allowed) b = all.states[0];
          }
        },
      ),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  });

  it('a refused take need not be stored: while the clock runs forwards, keeping only admitted states decides exactly as keeping every state', () => {
    const forwardStepArb = stepArb.map((s) => ({ ...s, dtUs: Math.abs(s.dtUs) }));
    fc.assert(
      fc.property(
        fc.array(ruleArb, { minLength: 1, maxLength: 3 }),
        startArb,
        fc.array(forwardStepArb, { minLength: 1, maxLength: 150 }),
        (rules, start, steps) => {
          recordCases('bucket property sequences', 1);
          let every: readonly (BucketState | undefined)[] = rules.map(() => undefined);
          let admittedOnly: readonly (BucketState | undefined)[] = every;
          let now = start;
          for (const step of steps) {
            now += step.dtUs;
            const costs = rules.map((r) =>
              Math.floor((r.burstCapacity * step.costPermille) / 1000),
            );
            const a = takeAllUs(every, rules, now, costs);
            const b = takeAllUs(admittedOnly, rules, now, costs);
            // The same decision, and the same buckets as of it (tokens and time), refused or not.
            expect(b.decision).toEqual(a.decision);
            expect(b.states).toEqual(a.states);
            every = a.states;
            if (b.decision.allowed) admittedOnly = b.states;
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a limited request waits exactly retryAfter: one ms earlier is still limited, at retryAfter it is admitted', () => {
    fc.assert(
      fc.property(
        ruleArb,
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 1, max: 1000 }),
        (rule, drainPermille, costPermille) => {
          recordCases('bucket property sequences', 1);
          const cost = Math.max(1, Math.floor((rule.burstCapacity * costPermille) / 1000));
          const drain = Math.floor((rule.burstCapacity * drainPermille) / 1000);
          const drained = take(undefined, rule, 1000, drain).state;
          const r = take(drained, rule, 1000, cost);
          if (r.decision.allowed) return;
          const wait = r.decision.retryAfterMs;
          if (wait > 1)
            expect(take(r.state, rule, 1000 + wait - 1, cost).decision.allowed).toBe(false);
          expect(take(r.state, rule, 1000 + wait, cost).decision.allowed).toBe(true);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('the memory store (one bucket per key) never admits more than the bound for any interleaving of keys', async () => {
    await fc.assert(
      fc.asyncProperty(
        ruleArb,
        fc.array(
          fc.record({
            key: fc.constantFrom('a', 'b', 'c'),
            dtMs: fc.double({ min: 0, max: 2000, noNaN: true }),
          }),
          { minLength: 1, maxLength: 150 },
        ),
        async (rule, steps) => {
          recordCases('bucket property sequences', 1);
          let clock = 1_000_000;
          const store = new MemoryBucketStore({ now: () => clock, sweepIntervalMs: 0 });
          const admitted = new Map<string, number>();
          const first = clock;
          for (const step of steps) {
            clock += step.dtMs;
            const d = await takeOne(store, step.key, rule);
            if (d.allowed)
              admitted.set(step.key, (admitted.get(step.key) ?? 0) + rule.requestedTokens);
            expect(d.remaining).toBeGreaterThanOrEqual(0);
            expect(d.remaining).toBeLessThanOrEqual(rule.burstCapacity);
          }
          // Times are rounded to whole µs inside: allow that 1 µs per step of slack, nothing more.
          const elapsedUs = Math.round(clock * 1000) - Math.round(first * 1000);
          for (const [, tokens] of admitted) {
            expect(tokens * MICRO).toBeLessThanOrEqual(
              rule.burstCapacity * MICRO + rule.replenishRate * elapsedUs,
            );
          }
          await store.close?.();
        },
      ),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  });

  it('rejects every rule or cost the exact arithmetic cannot support, with a message naming the values', () => {
    const bad = fc.oneof(
      fc.record({
        replenishRate: fc.oneof(
          fc.integer({ max: 0 }),
          fc.double({ min: 0.01, max: 0.99, noNaN: true }),
        ),
        burstCapacity: fc.constant(10),
        cost: fc.constant(1),
      }),
      fc.record({
        replenishRate: fc.constant(1),
        burstCapacity: fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 1_000_000_001 })),
        cost: fc.constant(1),
      }),
      fc.record({
        replenishRate: fc.constant(1),
        burstCapacity: fc.constant(10),
        cost: fc.oneof(fc.integer({ max: -1 }), fc.integer({ min: 11 }), fc.constant(Number.NaN)),
      }),
    );
    fc.assert(
      fc.property(bad, ({ replenishRate, burstCapacity, cost }) => {
        recordCases('bucket invalid rules', 1);
        expect(() =>
          take(undefined, { replenishRate, burstCapacity, requestedTokens: 1 }, 0, cost),
        ).toThrow(/invalid bucket rule: replenishRate .* burstCapacity .* cost/);
      }),
      { numRuns: RUNS },
    );
  });
});

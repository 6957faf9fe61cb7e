// Token-bucket math (lib/token-bucket/bucket.ts) with explicit times: no timers, no global clock.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  bucketTtlMs,
  fillTimeUs,
  take,
  type BucketRule,
  type BucketState,
} from '../../lib/token-bucket/bucket.ts';

const normal: BucketRule = { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 };
const e2e: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };

/** Admitted count for requests at the given times (ms) on one bucket. */
function admitted(rule: BucketRule, timesMs: readonly number[]): number {
  let state: BucketState | undefined;
  let count = 0;
  for (const t of timesMs) {
    const r = take(state, rule, t);
    state = r.state;
    if (r.decision.allowed) count++;
  }
  return count;
}

describe('token bucket math', () => {
  it('a new bucket is full: a burst of the Normal limits admits exactly 33 (100 tokens, 3 each)', () => {
    let state: BucketState | undefined;
    const decisions = [];
    for (let i = 0; i < 40; i++) {
      const r = take(state, normal, 1000);
      state = r.state;
      decisions.push(r.decision);
    }
    expect(decisions.filter((d) => d.allowed)).toHaveLength(33);
    expect(decisions[32]).toMatchObject({
      allowed: true,
      remaining: 1,
      limit: 100,
      cost: 3,
      retryAfterMs: 0,
    });
    // The 34th: 1 token left, 2 missing at 20 tokens/s -> 100 ms.
    expect(decisions[33]).toMatchObject({
      allowed: false,
      remaining: 1,
      retryAfterMs: 100,
      resetMs: 4950,
    });
  });

  it('refills replenishRate tokens per second with ms precision, up to burstCapacity', () => {
    const empty: BucketState = { microTokens: 0, updatedUs: 0 };
    // 0.15 s at 20/s = 3 tokens exactly: admitted, nothing left.
    expect(take(empty, normal, 150).decision).toMatchObject({ allowed: true, remaining: 0 });
    // 0.149 s = 2.98 tokens: limited; 0.001 s more would do (1 ms, not a whole second).
    expect(take(empty, normal, 149).decision).toMatchObject({
      allowed: false,
      remaining: 2,
      retryAfterMs: 1,
    });
    // An hour later: full, never more.
    expect(take(empty, normal, 3_600_000).decision).toMatchObject({ allowed: true, remaining: 97 });
  });

  it('the specification scenario (1/10/2, 30 GETs exactly 0.5 s apart) admits 12', () => {
    const times = Array.from({ length: 30 }, (_, i) => i * 500);
    expect(admitted(e2e, times)).toBe(12);
    // The same with the first gap padded by 50 ms (what the integration test sends) is still 12.
    expect(
      admitted(
        e2e,
        times.map((t, i) => (i === 0 ? t : t + 50)),
      ),
    ).toBe(12);
  });

  it('a sequential client whose period is 0.5 s plus a 0.19-0.258 s round trip sees 15 of 30', () => {
    // Periods 0.690-0.758 s admit 15; 0.759 s admits 16, 0.689 s 14.
    expect(
      admitted(
        e2e,
        Array.from({ length: 30 }, (_, i) => i * 689),
      ),
    ).toBe(14);
    expect(
      admitted(
        e2e,
        Array.from({ length: 30 }, (_, i) => i * 759),
      ),
    ).toBe(16);
    for (const periodMs of [690, 700, 720, 740, 758]) {
      expect(
        admitted(
          e2e,
          Array.from({ length: 30 }, (_, i) => i * periodMs),
        ),
      ).toBe(15);
    }
  });

  it('a clock that goes backwards refills nothing and keeps the later time', () => {
    const first = take(undefined, e2e, 10_000);
    const back = take(first.state, e2e, 9_000);
    expect(back.state.updatedUs).toBe(10_000_000);
    expect(back.decision.remaining).toBe(6);
  });

  it('TTL is the refill-from-empty time times the safety factor, at least 1 s', () => {
    expect(fillTimeUs(e2e)).toBe(10_000_000);
    expect(bucketTtlMs(e2e)).toBe(20_000);
    expect(bucketTtlMs(normal)).toBe(10_000);
    expect(bucketTtlMs({ replenishRate: 1000, burstCapacity: 1, requestedTokens: 1 })).toBe(1000);
  });

  it('rejects rules the exact arithmetic does not support', () => {
    expect(() =>
      take(undefined, { replenishRate: 0.5, burstCapacity: 10, requestedTokens: 1 }, 0),
    ).toThrow(RangeError);
    expect(() => take(undefined, e2e, 0, 11)).toThrow(RangeError);
  });

  it('properties: tokens stay within [0, capacity]; admitted never exceeds capacity + rate x elapsed', () => {
    const rule = fc.record({
      replenishRate: fc.integer({ min: 1, max: 1000 }),
      burstCapacity: fc.integer({ min: 1, max: 1000 }),
    });
    fc.assert(
      fc.property(
        rule,
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2_000_000 }), fc.nat()), {
          minLength: 1,
          maxLength: 200,
        }),
        (r, steps) => {
          let state: BucketState | undefined;
          let nowUs = 0;
          let taken = 0;
          for (const [gapUs, c] of steps) {
            nowUs += gapUs;
            const cost = c % (r.burstCapacity + 1);
            const res = take(state, { ...r, requestedTokens: 1 }, nowUs / 1000, cost);
            state = res.state;
            if (res.decision.allowed) taken += cost;
            expect(state.microTokens).toBeGreaterThanOrEqual(0);
            expect(state.microTokens).toBeLessThanOrEqual(r.burstCapacity * 1_000_000);
            expect(Number.isSafeInteger(state.microTokens)).toBe(true);
            if (!res.decision.allowed) {
              // Waiting retryAfterMs is enough.
              expect(
                take(
                  state,
                  { ...r, requestedTokens: 1 },
                  nowUs / 1000 + res.decision.retryAfterMs,
                  cost,
                ).decision.allowed,
              ).toBe(true);
            }
          }
          expect(taken * 1_000_000).toBeLessThanOrEqual(
            r.burstCapacity * 1_000_000 + r.replenishRate * nowUs,
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

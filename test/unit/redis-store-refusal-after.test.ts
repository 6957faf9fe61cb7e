// A remembered refusal's decision later on: every bucket refilled at its full rate since the call
// left (capped at its capacity), then bucket.ts' own decision for those tokens.
import { describe, expect, it } from 'vitest';
import { MICRO, takeAllUs, type BucketRule } from '../../lib/token-bucket/bucket.ts';
import { refusalAfter } from '../../lib/token-bucket/refusal-cache.ts';

describe('refusalAfter', () => {
  const slow: BucketRule = { replenishRate: 2, burstCapacity: 4, requestedTokens: 3 };
  const roomy: BucketRule = { replenishRate: 1000, burstCapacity: 10, requestedTokens: 1 };

  it('is the refusal bucket.ts gives for the tokens refilled since', () => {
    // 1.5 tokens at the decision; 400 ms later at 2 a second, 2.3: still short of 3.
    const d = refusalAfter({ rules: [slow], costs: [3], tokens: [1.5 * MICRO] }, 400_000);
    expect(d).toEqual({
      allowed: false,
      remaining: 2,
      limit: 4,
      cost: 3,
      retryAfterMs: 350,
      resetMs: 850,
    });
  });

  it('caps each bucket at its capacity and reports every limit, the short one deciding', () => {
    const d = refusalAfter(
      { rules: [slow, roomy], costs: [3, 1], tokens: [0, 2 * MICRO] },
      1_000_000,
    );
    expect(d.allowed).toBe(false);
    expect(d.limits?.map((l) => [l.remaining, l.retryAfterMs, l.resetMs])).toEqual([
      [2, 500, 1000],
      [10, 0, 0],
    ]);
    expect(d.retryAfterMs).toBe(500);
    // The same as the pure function's refusal for those tokens at that moment.
    const pure = takeAllUs(
      [
        { microTokens: 0, updatedUs: 0 },
        { microTokens: 2 * MICRO, updatedUs: 0 },
      ],
      [slow, roomy],
      1_000_000,
      [3, 1],
    );
    expect(d).toEqual(pure.decision);
  });
});

// The Redis store's reading of its script's packed reply (the call's time in µs, then per take
// allowed and one integer per bucket, its micro-tokens, all in one string):
// a well-formed slice becomes the same decision the pure bucket math gives (Retry-After and reset
// derived from the micro-tokens with the rule); anything else is a StoreUnavailableError (the
// onStoreError policy then decides), never a made-up decision.
import { describe, expect, it } from 'vitest';
import { takeAllUs, takeUs, type BucketRule } from '../../lib/token-bucket/bucket.ts';
import { StoreUnavailableError } from '../../lib/token-bucket/bucket-store.ts';
import { parseDecision, parseReply } from '../../lib/token-bucket/redis-reply.ts';

const rule: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };
const now = 1_795_000_000_000_000;

describe('redis store reply', () => {
  it('reads one take out of a packed batch reply, at its offset', () => {
    const first = takeUs(undefined, rule, now, 1);
    const fields = `${now} 1 ${first.state.microTokens} 0 0`.split(' ');
    const a = parseReply(fields, 1, [rule], [1]);
    expect(a.microTokens).toBe(first.state.microTokens);
    expect(a.nowUs).toBe(now);
    expect(a.decision).toEqual(first.decision);
    expect(parseDecision(fields, 1, [rule], [1])).toEqual(first.decision);
    const b = parseReply(fields, 3, [rule], [1]);
    expect(b.decision.allowed).toBe(false);
    expect(b.decision.remaining).toBe(0);
    // 1 token missing at 10 tokens/s: 100 ms; 20 missing: 2 s until full.
    expect(b.decision.retryAfterMs).toBe(100);
    expect(b.decision.resetMs).toBe(2000);
    expect(parseDecision(fields, 3, [rule], [1])).toEqual(b.decision);
  });

  it.each([
    ['allowed is not 0 or 1', `${now} 2 19000000`],
    ['an empty field', `${now} 1 `],
    ['a field that is not a number', `${now} 1 soon`],
    ['a value past 2^53', `${now} 1 17950000000000000000`],
    ['negative micro-tokens', `${now} 0 -1000000`],
    ['a short slice', `${now} 1`],
  ])('refuses a reply with %s', (_why, reply) => {
    expect(() => parseReply(reply.split(' '), 1, [rule], [1])).toThrow(StoreUnavailableError);
    expect(() => parseDecision(reply.split(' '), 1, [rule], [1])).toThrow(StoreUnavailableError);
  });

  it('refuses a raw reply whose time is not an integer', () => {
    expect(() => parseReply(['soon', '1', '19000000'], 1, [rule], [1])).toThrow(
      StoreUnavailableError,
    );
  });

  it('reads a take of several buckets: every bucket, and the decision of the most constraining one', () => {
    const hourly: BucketRule = { replenishRate: 1, burstCapacity: 3, requestedTokens: 2 };
    const pure = takeAllUs([undefined, undefined], [rule, hourly], now, [1, 2]);
    const fields = [String(now), '1', ...pure.states.map((st) => String(st.microTokens))];
    const raw = parseReply(fields, 1, [rule, hourly], [1, 2]);
    expect(raw.tokens).toEqual(pure.states.map((st) => st.microTokens));
    expect(raw.decision).toEqual(pure.decision);
    expect(raw.decision.remaining).toBe(1); // the hourly bucket: 3 - 2
    expect(parseDecision(fields, 1, [rule, hourly], [1, 2])).toEqual(pure.decision);
    expect(() => parseReply(fields.slice(0, 3), 1, [rule, hourly], [1, 2])).toThrow(
      StoreUnavailableError,
    );
  });

  it('a refused take of several buckets: Retry-After of the bucket that lacks its cost, 0 for the one that held it', () => {
    const hourly: BucketRule = { replenishRate: 1, burstCapacity: 3, requestedTokens: 2 };
    // The first bucket holds 5 tokens (enough), the hourly one 1.5 (2 needed): refused, nothing charged.
    const pure = takeAllUs(
      [
        { microTokens: 5_000_000, updatedUs: now },
        { microTokens: 1_500_000, updatedUs: now },
      ],
      [rule, hourly],
      now,
      [1, 2],
    );
    const raw = parseReply([String(now), '0', '5000000', '1500000'], 1, [rule, hourly], [1, 2]);
    expect(raw.decision).toEqual(pure.decision);
    expect(raw.decision.limits?.map((d) => d.retryAfterMs)).toEqual([0, 500]);
    expect(raw.decision.retryAfterMs).toBe(500);
  });
});

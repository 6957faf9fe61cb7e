// The Redis store's reading of its script's packed reply (per take: allowed, then 4 integers per
// bucket, all in one string):
// a well-formed slice becomes the same decision the pure bucket math gives; anything else is a
// StoreUnavailableError (the onStoreError policy then decides), never a made-up decision.
import { describe, expect, it } from 'vitest';
import { takeAllUs, takeUs, type BucketRule } from '../../sidecar/bucket.ts';
import { StoreUnavailableError } from '../../sidecar/stores/bucket-store.ts';
import { parseDecision, parseReply } from '../../sidecar/stores/redis.ts';

const rule: BucketRule = { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 };

describe('redis store reply', () => {
  it('reads one take out of a packed batch reply, at its offset', () => {
    const now = 1_795_000_000_000_000;
    const first = takeUs(undefined, rule, now, 1);
    const resetUs = Math.ceil((rule.burstCapacity * 1_000_000 - first.state.microTokens) / rule.replenishRate);
    const fields = `1 ${first.state.microTokens} 0 ${resetUs} ${now} 0 0 100000 2000000 ${now}`.split(' ');
    const a = parseReply(fields, 0, [rule], [1]);
    expect(a.microTokens).toBe(first.state.microTokens);
    expect(a.nowUs).toBe(now);
    expect(a.decision).toEqual(first.decision);
    const b = parseReply(fields, 5, [rule], [1]);
    expect(b.decision.allowed).toBe(false);
    expect(b.decision.remaining).toBe(0);
    expect(b.decision.retryAfterMs).toBe(100);
  });

  it.each([
    ['allowed is not 0 or 1', '2 19000000 0 100000 1795000000000000'],
    ['an empty field', '1  0 100000 1795000000000000'],
    ['a field that is not a number', '1 19000000 soon 100000 1795000000000000'],
    ['a value past 2^53', '1 19000000 0 100000 17950000000000000000'],
    ['a short slice', '1 19000000 0'],
  ])('refuses a reply with %s', (_why, reply) => {
    expect(() => parseReply(reply.split(' '), 0, [rule], [1])).toThrow(StoreUnavailableError);
    expect(() => parseDecision(reply.split(' '), 0, [rule], [1])).toThrow(StoreUnavailableError);
  });

  it('reads a take of several buckets: every bucket state, and the decision of the most constraining one', () => {
    const now = 1_795_000_000_000_000;
    const hourly: BucketRule = { replenishRate: 1, burstCapacity: 3, requestedTokens: 2 };
    const pure = takeAllUs([undefined, undefined], [rule, hourly], now, [1, 2]);
    const fields = ['1'];
    for (const [i, state] of pure.states.entries()) {
      const r = [rule, hourly][i] as BucketRule;
      fields.push(String(state.microTokens), '0', String(Math.ceil((r.burstCapacity * 1_000_000 - state.microTokens) / r.replenishRate)), String(now));
    }
    const raw = parseReply(fields, 0, [rule, hourly], [1, 2]);
    expect(raw.states).toEqual(pure.states);
    expect(raw.decision).toEqual(pure.decision);
    expect(raw.decision.remaining).toBe(1); // the hourly bucket: 3 - 2
    expect(parseDecision(fields, 0, [rule, hourly], [1, 2])).toEqual(pure.decision);
    expect(() => parseReply(fields.slice(0, 6), 0, [rule, hourly], [1, 2])).toThrow(StoreUnavailableError);
  });
});

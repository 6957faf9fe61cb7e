// The memory store's bound (maxBuckets, maxBytes): at the bound it forgets only buckets that have
// refilled to full, and refuses a new key rather than admit it as if its bucket were full.
import { describe, expect, it } from 'vitest';
import { entryBytes, MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';

describe('bounded memory bucket store', () => {
  // Refills 1 token/s, so an emptied bucket is full again 10 s later.
  const rule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 1 };

  const bounded = (bound: { maxBuckets?: number; maxBytes?: number }, clock: { now: number }) => {
    const counts = { evicted: 0, refused: 0 };
    const store = new MemoryBucketStore({
      now: () => clock.now,
      sweepIntervalMs: 0,
      ...bound,
      onEvicted: (n) => (counts.evicted += n),
      onRefusedFull: () => counts.refused++,
    });
    return { store, counts };
  };

  it('refuses a new key while no held bucket has refilled, and never forgets a drained one', () => {
    const clock = { now: 0 };
    const { store, counts } = bounded({ maxBuckets: 2 }, clock);
    for (let i = 0; i < 10; i++) expect(store.takeSync('drained', rule).allowed).toBe(true);
    expect(store.takeSync('other', rule).allowed).toBe(true);
    const refused = store.takeSync('new', rule);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    // 'other' (1 token short) is full again at 1 s: the earliest a bucket can be forgotten.
    expect(refused.retryAfterMs).toBe(1000);
    expect(counts).toEqual({ evicted: 0, refused: 1 });
    expect(store.size).toBe(2);
    // The drained user is still limited: the refusal did not make room by forgetting it.
    expect(store.takeSync('drained', rule).allowed).toBe(false);
  });

  it('a take of several buckets that makes room by forgetting its own full bucket still stores that bucket', () => {
    const clock = { now: 0 };
    const { store } = bounded({ maxBuckets: 2 }, clock);
    const tight = { replenishRate: 1, burstCapacity: 1, requestedTokens: 1 };
    store.takeSync('a', tight);
    store.takeSync('b', tight);
    clock.now = 5_000; // both full again: either may be forgotten
    // Buckets 'a' (held) and its second one (new): room is made, and 'a' may be among the forgotten.
    expect(store.takeAllSync('a', [tight, rule], [1, 1]).allowed).toBe(true);
    // Its first bucket was drained by that take: still refused at once.
    expect(store.takeAllSync('a', [tight, rule], [1, 1]).allowed).toBe(false);
  });

  it('forgets a bucket once it has refilled to full, and admits the new key in its place', () => {
    const clock = { now: 0 };
    const { store, counts } = bounded({ maxBuckets: 2 }, clock);
    for (let i = 0; i < 10; i++) store.takeSync('drained', rule);
    store.takeSync('other', rule);
    clock.now = 1000; // 'other' is full again; 'drained' holds 1 token
    expect(store.takeSync('new', rule).allowed).toBe(true);
    expect(counts).toEqual({ evicted: 1, refused: 0 });
    expect(store.size).toBe(2);
    // 'drained' kept its state: 1 token refilled, the second take is refused.
    expect(store.takeSync('drained', rule).allowed).toBe(true);
    expect(store.takeSync('drained', rule).allowed).toBe(false);
  });

  it('bounds the estimated bytes as well as the count', () => {
    const clock = { now: 0 };
    const long = (i: number) => `${'u'.repeat(200)}-${i}`;
    const maxBytes = 3 * entryBytes(long(0));
    const { store, counts } = bounded({ maxBytes }, clock);
    for (let i = 0; i < 3; i++) expect(store.takeSync(long(i), rule).allowed).toBe(true);
    expect(store.takeSync(long(3), rule).allowed).toBe(false);
    expect(store.bytes).toBeLessThanOrEqual(maxBytes);
    expect(counts.refused).toBe(1);
  });

  it('takes of several limits need room for every new bucket, and a refusal writes none', () => {
    const clock = { now: 0 };
    const { store } = bounded({ maxBuckets: 3 }, clock);
    const rules = [rule, { replenishRate: 1, burstCapacity: 100, requestedTokens: 1 }];
    expect(store.takeAllSync('a', rules, [1, 1]).allowed).toBe(true);
    const refused = store.takeAllSync('b', rules, [1, 1]);
    expect(refused.allowed).toBe(false);
    expect(refused.limits).toHaveLength(2);
    expect(store.size).toBe(2);
    expect(store.takeSync('c', rule).allowed).toBe(true); // one bucket still fits
  });

  it('an unbounded store (0) admits any number of keys', () => {
    const clock = { now: 0 };
    const { store } = bounded({ maxBuckets: 0, maxBytes: 0 }, clock);
    for (let i = 0; i < 1000; i++) expect(store.takeSync(`k${i}`, rule).allowed).toBe(true);
    expect(store.size).toBe(1000);
  });
});

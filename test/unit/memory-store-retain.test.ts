// A reload to limits that refill more slowly: the memory store keeps a drained bucket's state past
// the TTL its last admitted take set, for the new limits' TTL, so the bucket does not read as full.
import { describe, expect, it } from 'vitest';
import { bucketTtlMs, type BucketRule } from '../../lib/token-bucket/bucket.ts';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import { takeAll, takeOne } from '../../lib/token-bucket/take-promise.ts';

const before: BucketRule = { replenishRate: 10, burstCapacity: 10, requestedTokens: 1 };

describe('memory store retain', () => {
  it('a lower rate: the drained bucket refills at the new rate after the old TTL', async () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    for (let i = 0; i < 10; i++) expect((await takeOne(store, 'r:u', before)).allowed).toBe(true);
    const after: BucketRule = { replenishRate: 2, burstCapacity: 10, requestedTokens: 1 };
    expect(await store.retain('r:', [bucketTtlMs(after)])).toBe(1);
    now = 2500; // past the old TTL (2 s): 5 tokens at the new rate
    store.sweep();
    let admitted = 0;
    while ((await takeOne(store, 'r:u', after)).allowed) admitted++;
    expect(admitted).toBe(5);
    await store.close();
  });

  it('a larger burst, several limits: each bucket keeps its state for its own new TTL; other prefixes are left alone', async () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    const limits = [before, { replenishRate: 10, burstCapacity: 20, requestedTokens: 1 }];
    for (let i = 0; i < 10; i++) expect((await takeAll(store, 'r:u', limits)).allowed).toBe(true);
    await takeOne(store, 'other:u', before, 10);
    const after = [
      { replenishRate: 10, burstCapacity: 100, requestedTokens: 1 },
      { replenishRate: 10, burstCapacity: 200, requestedTokens: 1 },
    ];
    expect(await store.retain('r:', after.map(bucketTtlMs))).toBe(2);
    now = 4500; // past both old TTLs (2 s and 4 s)
    store.sweep();
    expect(store.size).toBe(2);
    // 0 and 10 tokens left, 45 refilled: 45 admitted (the first bucket binds).
    let admitted = 0;
    while ((await takeAll(store, 'r:u', after)).allowed) admitted++;
    expect(admitted).toBe(45);
    await store.close();
  });
});

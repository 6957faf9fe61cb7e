// The in-memory BucketStore with an injected clock.
import { describe, expect, it } from 'vitest';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import { takeOne } from '../../lib/token-bucket/take-promise.ts';

describe('memory bucket store', () => {
  const rule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };

  it('keeps one bucket per key and refills on the injected clock', async () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    for (let i = 0; i < 5; i++) expect((await takeOne(store, 'a', rule)).allowed).toBe(true);
    expect((await takeOne(store, 'a', rule)).allowed).toBe(false);
    expect((await takeOne(store, 'b', rule)).allowed).toBe(true); // another key, its own bucket
    now = 1999;
    expect((await takeOne(store, 'a', rule)).allowed).toBe(false);
    now = 2000;
    expect(await takeOne(store, 'a', rule)).toMatchObject({ allowed: true, remaining: 0 });
    await store.close();
  });

  it('forgets idle buckets after their TTL (they would be full again anyway)', async () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    await takeOne(store, 'a', rule, 10);
    now = 19_999;
    store.sweep();
    expect(store.size).toBe(1);
    now = 20_000;
    store.sweep();
    expect(store.size).toBe(0);
    expect((await takeOne(store, 'a', rule, 10)).allowed).toBe(true);
    await store.close();
  });

  it('a refused take leaves the bucket as it was: its state and expiry stay those of the last admitted take', async () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    for (let i = 0; i < 5; i++) await takeOne(store, 'a', rule); // empty at 0 s; full again at 10 s, forgotten at 20 s
    now = 1900;
    expect(await takeOne(store, 'a', rule)).toMatchObject({
      allowed: false,
      remaining: 1,
      retryAfterMs: 100,
    });
    // Writing the refused state would have moved the expiry to 21.9 s; it is still 20 s.
    now = 19_999;
    store.sweep();
    expect(store.size).toBe(1);
    now = 20_000;
    store.sweep();
    expect(store.size).toBe(0);
    // Refilled from the admitted state: at 2 s exactly one take's worth (2 tokens) is back.
    const again = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    now = 0;
    for (let i = 0; i < 5; i++) await takeOne(again, 'a', rule);
    now = 1900;
    await takeOne(again, 'a', rule);
    now = 2000;
    expect(await takeOne(again, 'a', rule)).toMatchObject({ allowed: true, remaining: 0 });
    expect(await takeOne(again, 'a', rule)).toMatchObject({ allowed: false, retryAfterMs: 2000 });
    await store.close();
    await again.close();
  });

  it('take decides at once: the sink hears the decision before take returns, exactly once', () => {
    let now = 0;
    const store = new MemoryBucketStore({ now: () => now, sweepIntervalMs: 0 });
    const heard: string[] = [];
    const sink = {
      taken: (d: { allowed: boolean; remaining: number }) =>
        heard.push(d.allowed ? `allowed ${d.remaining}` : 'limited'),
      failed: (e: Error) => heard.push(`failed ${e.name}`),
    };
    for (let i = 0; i < 6; i++) store.take('sync', [rule], [2], sink);
    expect(heard).toEqual([
      'allowed 8',
      'allowed 6',
      'allowed 4',
      'allowed 2',
      'allowed 0',
      'limited',
    ]);
    now = 2000;
    store.take('sync', [rule], [2], sink);
    expect(heard.at(-1)).toBe('allowed 0');
    // A cost above the capacity is refused through failed(), not thrown at the caller.
    store.take('sync', [rule], [11], sink);
    expect(heard.at(-1)).toBe('failed RangeError');
    expect(heard).toHaveLength(8);
  });
});

// The per-key count behind limiter.maxInFlightPerKey, and the bound a key gets from the pool size.
import { describe, expect, it } from 'vitest';
import { KeyInFlight, keyInFlightBound } from '../../sidecar/key-in-flight.ts';

describe('requests in flight per key', () => {
  it('admits up to the bound per key, each key on its own, and forgets a key with none left', () => {
    const keys = new KeyInFlight();
    expect(keys.acquire('a', 2)).toBe(true);
    expect(keys.acquire('a', 2)).toBe(true);
    expect(keys.acquire('a', 2)).toBe(false);
    expect(keys.acquire('b', 2)).toBe(true);
    keys.release('a');
    expect(keys.acquire('a', 2)).toBe(true);
    keys.release('a');
    keys.release('a');
    keys.release('b');
    expect(keys.size).toBe(0);
    keys.release('a'); // a release without an acquire changes nothing
    expect(keys.size).toBe(0);
  });

  it('gives one key at most a quarter of the upstream connections, or nothing when off', () => {
    expect(keyInFlightBound(32, 128)).toBe(32);
    expect(keyInFlightBound(32, 8)).toBe(2);
    expect(keyInFlightBound(32, 1)).toBe(1);
    expect(keyInFlightBound(4, 128)).toBe(4);
    expect(keyInFlightBound(0, 128)).toBe(0);
  });
});

// The sign-in guards in isolation: the throttle's address keys (IPv6 per /64), its order of
// charging (the per-username budget only after the per-pair and per-address ones allow), failing
// closed when the store fails, and the password gate's bound on concurrent hashing.
import { describe, expect, it } from 'vitest';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import type { BucketStore } from '../../lib/token-bucket/bucket-store.ts';
import {
  createPasswordGate,
  defaultHashConcurrency,
  GateFull,
} from '../../services/auth-server/password-gate.ts';
import {
  addressKey,
  createSignInThrottle,
  StoreUnavailable,
} from '../../services/auth-server/throttle.ts';

describe('addressKey', () => {
  it('keeps IPv4 (also IPv4-mapped IPv6) and keys IPv6 by its /64', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff:0:0:9')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'));
  });
});

describe('sign-in throttle', () => {
  const limits = {
    perUsernameAndAddress: { burst: 2, perMinute: 1 },
    perUsername: { burst: 3, perMinute: 1 },
    perAddress: { burst: 100, perMinute: 100 },
  };

  it('an address locked out of one account does not drain that account for other addresses', async () => {
    const throttle = createSignInThrottle(
      new MemoryBucketStore({ now: Date.now }),
      limits,
      () => {},
    );
    const fromAttacker = [];
    for (let i = 0; i < 6; i++)
      fromAttacker.push((await throttle.attempt('Bob', '198.51.100.9')).allowed);
    expect(fromAttacker).toEqual([true, true, false, false, false, false]);
    // bob's own budget was charged twice (the allowed attempts), so he still gets in elsewhere.
    expect((await throttle.attempt('bob', '192.0.2.1')).allowed).toBe(true);
    // ...and the per-username budget (3) still bounds guessing from many addresses.
    expect((await throttle.attempt('bob', '192.0.2.2')).allowed).toBe(false);
  });

  it('fails closed when the store fails, and reports the error', async () => {
    const errors: unknown[] = [];
    const broken: BucketStore = {
      take: (_key, _rules, _costs, sink) => sink.failed(new Error('connection refused')),
      ready: async () => {},
      isReady: () => false,
      close: async () => {},
    };
    const throttle = createSignInThrottle(broken, limits, (err) => errors.push(err));
    await expect(throttle.attempt('bob', '192.0.2.1')).rejects.toBeInstanceOf(StoreUnavailable);
    expect(errors.length).toBeGreaterThan(0);
  });
});

describe('password gate', () => {
  it('runs at most `concurrency` at once, queues `queue` more and refuses the rest', async () => {
    const gate = createPasswordGate({ concurrency: 2, queue: 3, perKey: 8 });
    let active = 0;
    let peak = 0;
    const releases: (() => void)[] = [];
    const job = () =>
      gate.run('192.0.2.1', async () => {
        active++;
        peak = Math.max(peak, active);
        await new Promise<void>((resolve) => releases.push(resolve));
        active--;
        return 'done';
      });
    const runs = Array.from({ length: 8 }, () => job().catch((err: unknown) => err));
    await new Promise((r) => setImmediate(r));
    expect(gate.load()).toEqual({ running: 2, waiting: 3 });
    const refused = (await Promise.all(runs.slice(5))) as unknown[];
    for (const err of refused) {
      expect(err).toBeInstanceOf(GateFull);
      expect((err as GateFull).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    }
    while (releases.length > 0 || gate.load().running > 0) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all(runs.slice(0, 5))).toEqual(['done', 'done', 'done', 'done', 'done']);
    expect(peak).toBe(2);
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it("one key holds at most its share; a freed slot goes to the keys in turn, so another key waits one hash, not the flood's", async () => {
    const gate = createPasswordGate({ concurrency: 1, queue: 16, perKey: 8 });
    const order: string[] = [];
    const releases: (() => void)[] = [];
    const job = (key: string) =>
      gate.run(key, async () => {
        order.push(key);
        await new Promise<void>((resolve) => releases.push(resolve));
      });
    const flood = Array.from({ length: 10 }, () => job('flood').catch((err: unknown) => err));
    await new Promise((r) => setImmediate(r));
    const other = job('other');
    // 8 places for the flood (1 running, 7 waiting), the 2 beyond its share refused at once.
    expect(gate.load()).toEqual({ running: 1, waiting: 8 });
    const refused = (await Promise.all(flood.slice(8))) as GateFull[];
    expect(refused.map((e) => e.reason)).toEqual(['key', 'key']);
    for (let i = 0; i < 3; i++) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(order.slice(0, 3)).toEqual(['flood', 'flood', 'other']);
    while (releases.length > 0 || gate.load().running > 0) {
      releases.shift()?.();
      await new Promise((r) => setImmediate(r));
    }
    await other;
    expect(gate.load()).toEqual({ running: 0, waiting: 0 });
  });

  it('by default leaves a core and two pool threads for the rest of the server', () => {
    expect(defaultHashConcurrency({}, 2)).toBe(1);
    expect(defaultHashConcurrency({}, 8)).toBe(2);
    expect(defaultHashConcurrency({ UV_THREADPOOL_SIZE: '16' }, 8)).toBe(7);
    expect(defaultHashConcurrency({ UV_THREADPOOL_SIZE: '2' }, 1)).toBe(1);
  });

  it('releases its slot when the job throws', async () => {
    const gate = createPasswordGate({ concurrency: 1, queue: 0 });
    await expect(gate.run('a', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run('a', () => Promise.resolve(7))).toBe(7);
  });
});

// The failed-client-authentication budget on a clock the test moves: the burst, the refill of one
// failure per refillSeconds, one lockout signal per lockout, and a table that stays bounded.
import { describe, expect, it } from 'vitest';
import { createClientAuthThrottle } from '../../services/auth-server/client-auth-throttle.ts';

function setup(limits = { burst: 3, refillSeconds: 6, maxEntries: 100 }) {
  let t = Date.UTC(2026, 0, 1);
  return {
    throttle: createClientAuthThrottle(limits, () => t),
    advance: (ms: number) => (t += ms),
  };
}

describe('client authentication throttle', () => {
  it('allows the burst of failures, then refuses with the wait until one failure has refilled', () => {
    const { throttle, advance } = setup();
    const lockouts = [];
    for (let i = 0; i < 3; i++) {
      expect(throttle.check('app', '192.0.2.1')).toEqual({ allowed: true });
      lockouts.push(throttle.failed('app', '192.0.2.1'));
    }
    expect(lockouts).toEqual([false, false, true]);
    expect(throttle.check('app', '192.0.2.1')).toEqual({ allowed: false, retryAfterSeconds: 6 });
    advance(2500);
    expect(throttle.check('app', '192.0.2.1')).toEqual({ allowed: false, retryAfterSeconds: 4 });
    advance(3500);
    expect(throttle.check('app', '192.0.2.1')).toEqual({ allowed: true });
    // One failure refilled: the next wrong secret locks out again at once, and says so again.
    expect(throttle.failed('app', '192.0.2.1')).toBe(true);
    expect(throttle.check('app', '192.0.2.1')).toMatchObject({ allowed: false });
  });

  it('keeps clients and addresses apart', () => {
    const { throttle } = setup({ burst: 1, refillSeconds: 60, maxEntries: 100 });
    expect(throttle.failed('app', '192.0.2.1')).toBe(true);
    expect(throttle.check('app', '192.0.2.1')).toMatchObject({ allowed: false });
    expect(throttle.check('app', '192.0.2.2')).toEqual({ allowed: true });
    expect(throttle.check('other', '192.0.2.1')).toEqual({ allowed: true });
  });

  it('forgets a pair once its budget is full again', () => {
    const { throttle, advance } = setup({ burst: 2, refillSeconds: 1, maxEntries: 100 });
    throttle.failed('app', '192.0.2.1');
    throttle.failed('app', '192.0.2.1');
    advance(2000);
    expect(throttle.check('app', '192.0.2.1')).toEqual({ allowed: true });
    // Forgotten means a full burst again, not a partial one.
    expect([throttle.failed('app', '192.0.2.1'), throttle.failed('app', '192.0.2.1')]).toEqual([
      false,
      true,
    ]);
  });

  it('remembers at most maxEntries pairs, dropping the least recently failed', () => {
    const { throttle } = setup({ burst: 1, refillSeconds: 60, maxEntries: 3 });
    for (const address of ['192.0.2.1', '192.0.2.2', '192.0.2.3']) throttle.failed('app', address);
    throttle.failed('app', '192.0.2.1'); // most recent again
    throttle.failed('app', '192.0.2.4'); // pushes out 192.0.2.2
    expect(throttle.check('app', '192.0.2.2')).toEqual({ allowed: true });
    for (const address of ['192.0.2.1', '192.0.2.3', '192.0.2.4'])
      expect(throttle.check('app', address), address).toMatchObject({ allowed: false });
  });
});

// The memory adapters with a fake clock: single-use codes with replay memory, refresh rotation
// with reuse detection, interactions taken once, consents as a union. (The Redis adapters run the
// same behaviours through the real server in test/integration/auth-errors.test.ts.)
import { describe, expect, it } from 'vitest';
import { createMemoryStores } from '../../services/auth-server/stores/memory.ts';
import { createMemorySessionStore } from '../../services/auth-server/stores/memory-sessions.ts';

function clock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const record = {
  clientId: 'c',
  redirectUri: 'https://a/cb',
  scope: ['profile'],
  user: 'alice',
  authTime: 1,
  expiresAt: 1_060_000,
};

describe('memory stores', () => {
  it('a code is consumed once; later attempts are replays that see what it issued', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    await s.codes.put('h', record, 60_000);
    expect(await s.codes.consume('h', 600_000)).toEqual({ status: 'ok', record });
    expect(await s.codes.consume('h', 600_000)).toEqual({ status: 'replayed' });
    // The replay happened before the tokens were attached: attachIssued reports it.
    expect(await s.codes.attachIssued('h', { familyId: 'f', jti: 'j', accessExpiresAt: 5 })).toBe(
      true,
    );
    expect(await s.codes.consume('h', 600_000)).toEqual({
      status: 'replayed',
      issued: { familyId: 'f', jti: 'j', accessExpiresAt: 5 },
    });
    await s.close();
  });

  it('an unused code expires with its TTL; a used one is remembered for the replay window', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    await s.codes.put('a', record, 60_000);
    await s.codes.put('b', record, 60_000);
    expect((await s.codes.consume('b', 600_000)).status).toBe('ok');
    c.advance(60_001);
    expect(await s.codes.consume('a', 600_000)).toEqual({ status: 'unknown' });
    expect((await s.codes.consume('b', 600_000)).status).toBe('replayed');
    c.advance(600_000);
    expect((await s.codes.consume('b', 600_000)).status).toBe('unknown');
    await s.close();
  });

  it('refresh rotation: current -> ok; old -> reused (family revoked, its access tokens returned); unknown -> invalid', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    const grant = { clientId: 'c', user: 'alice', scope: ['profile'], authTime: 1 };
    await s.refresh.create('fam', 'r1', grant, c.now(), 3_600_000, c.now() + 86_400_000);
    await s.refresh.addAccessToken('fam', { jti: 'a1', expiresAt: 2_000_000 });
    expect(await s.refresh.rotate('fam', 'r1', 'r2', c.now(), 3_600_000)).toEqual({
      status: 'ok',
      grant,
    });
    expect((await s.refresh.inspect('fam', 'r2', c.now()))?.active).toBe(true);
    expect((await s.refresh.inspect('fam', 'r1', c.now()))?.active).toBe(false);
    expect(await s.refresh.rotate('fam', 'zz', 'r3', c.now(), 3_600_000)).toEqual({
      status: 'invalid',
    });
    expect(await s.refresh.rotate('fam', 'r1', 'r3', c.now(), 3_600_000)).toEqual({
      status: 'reused',
      grant,
      jtis: [{ jti: 'a1', expiresAt: 2_000_000 }],
    });
    expect(await s.refresh.rotate('fam', 'r2', 'r3', c.now(), 3_600_000)).toEqual({
      status: 'invalid',
    });
    expect(await s.refresh.familiesOf('alice', 'c')).toEqual(['fam']);
    await s.close();
  });

  it('a family ends at its absolute end however often it rotates; no token outlives the end', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    await s.refresh.create(
      'fam',
      'r1',
      { clientId: 'c', user: 'u', scope: [], authTime: 1 },
      c.now(),
      1000,
      c.now() + 2500,
    );
    c.advance(900);
    expect((await s.refresh.rotate('fam', 'r1', 'r2', c.now(), 1000)).status).toBe('ok');
    c.advance(900);
    expect((await s.refresh.rotate('fam', 'r2', 'r3', c.now(), 1000)).status).toBe('ok');
    // 1800 ms in: the new token would live to 2800, but the family ends at 2500.
    expect((await s.refresh.inspect('fam', 'r3', c.now()))?.expiresAt).toBe(c.now() + 700);
    c.advance(700);
    expect(await s.refresh.rotate('fam', 'r3', 'r4', c.now(), 1000)).toEqual({ status: 'invalid' });
    await s.close();
  });

  it('an expired refresh token does not rotate', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    await s.refresh.create(
      'fam',
      'r1',
      { clientId: 'c', user: 'u', scope: [], authTime: 1 },
      c.now(),
      1000,
      c.now() + 86_400_000,
    );
    c.advance(1000);
    expect(await s.refresh.rotate('fam', 'r1', 'r2', c.now(), 1000)).toEqual({ status: 'invalid' });
    await s.close();
  });

  it('interactions are taken once; consents accumulate scopes; revoked jtis expire', async () => {
    const c = clock();
    const s = createMemoryStores(c.now);
    await s.interactions.put(
      'i',
      { kind: 'account', browserHash: 'b', csrf: 'x', expiresAt: c.now() + 1000 },
      1000,
    );
    expect((await s.interactions.take('i'))?.kind).toBe('account');
    expect(await s.interactions.take('i')).toBeUndefined();
    await s.consents.grant('alice', 'c', ['profile'], 1);
    await s.consents.grant('alice', 'c', ['email'], 2);
    expect(await s.consents.get('alice', 'c')).toEqual({
      scopes: ['email', 'profile'],
      grantedAt: 2,
    });
    await s.consents.revoke('alice', 'c');
    expect((await s.consents.list('alice')).size).toBe(0);
    await s.revoked.revoke('j', c.now() + 500, c.now());
    expect(await s.revoked.isRevoked('j')).toBe(true);
    c.advance(500);
    expect(await s.revoked.isRevoked('j')).toBe(false);
    await s.close();
  });
});

describe('memory sign-in sessions', () => {
  it('the sweep drops sessions that expired, of users who never come back, and keeps live ones', async () => {
    const sessions = createMemorySessionStore();
    const session = (user: string) => ({ user, authTime: 0, endsAt: 10_000_000 });
    for (let i = 0; i < 100; i++)
      await sessions.create(`gone-${i}`, session(`user-${i}`), 0, 1_000);
    await sessions.create('live', session('alice'), 0, 60_000);
    expect(sessions.size).toBe(101);
    sessions.sweep(2_000);
    expect(sessions.size).toBe(1);
    expect(await sessions.touch('live', 2_000, 60_000)).toEqual(session('alice'));
  });
});

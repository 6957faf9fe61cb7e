// The auth server's Redis scripts run as ioredis commands (EVALSHA). Redis forgets loaded scripts
// on a restart, a failover or SCRIPT FLUSH; the next call must load the script again and give the
// same answer, never a NOSCRIPT error to the token endpoint.
import { describe, expect } from 'vitest';
import { createRedisStores } from '../../services/auth-server/stores/redis.ts';
import { test as it } from '../harness/fixtures.ts';

const record = {
  clientId: 'demo',
  redirectUri: 'https://app.example/cb',
  scope: ['profile'],
  user: 'alice',
  authTime: 1,
  expiresAt: Date.now() + 60_000,
};

describe('auth server scripts after Redis forgot them', () => {
  it('a code is consumed once, then seen as replayed, across SCRIPT FLUSH', async ({
    redisAdmin: client,
  }) => {
    const stores = createRedisStores(client, 'scripts-test:');
    await stores.codes.put('h1', record, 60_000);
    await client.script('FLUSH');
    expect(await stores.codes.consume('h1', 60_000)).toEqual({ status: 'ok', record });
    await client.script('FLUSH');
    expect(await stores.codes.attachIssued('h1', { jti: 'j1', accessExpiresAt: 5 })).toBe(false); // not replayed yet
    expect(await stores.codes.consume('h1', 60_000)).toEqual({
      status: 'replayed',
      issued: { jti: 'j1', accessExpiresAt: 5 },
    });
  });

  it('a refresh family rotates and is revoked with its access tokens, across SCRIPT FLUSH', async ({
    redisAdmin: client,
  }) => {
    const stores = createRedisStores(client, 'scripts-test:');
    const grant = { user: 'alice', clientId: 'demo', scope: ['profile'], authTime: 1 };
    const now = Date.now();
    await stores.refresh.create('f1', 't1', grant, now, 60_000, now + 600_000);
    await client.script('FLUSH');
    expect(await stores.refresh.rotate('f1', 't1', 't2', now, 60_000)).toEqual({
      status: 'ok',
      grant,
    });
    await client.script('FLUSH');
    await stores.refresh.addAccessToken('f1', { jti: 'a1', expiresAt: now + 300_000 });
    await client.script('FLUSH');
    expect(await stores.refresh.revoke('f1')).toEqual([{ jti: 'a1', expiresAt: now + 300_000 }]);
  });
});

// Auth servers of two namespaces (team-a, team-b) sharing one Redis, as the operator runs them
// (AUTH_NAMESPACE), each with a client registered under the same id (demo-client). A user's
// consents, sign-in throttles and every other key of one namespace's server are not the other's:
// before, both servers used the same keys, so a consent given in one skipped the consent page in
// the other and guesses against one server locked the user out of every server.
import { describe, expect, it } from 'vitest';
import { authKeyPrefix } from '../../lib/tenancy/tenant-keys.ts';
import { createTenantRedisUsers } from '../../operator/redis/tenant-redis-users.ts';
import { perDescribe } from '../harness/fixtures.ts';
import { authorize, tokenRequest, trySignIn } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const THROTTLE = {
  AUTH_TRUST_PROXY: 'true',
  AUTH_SIGNIN_USER_BURST: '3',
  AUTH_SIGNIN_USER_PER_MINUTE: '1',
  AUTH_SIGNIN_USER_ADDRESS_BURST: '10',
  AUTH_SIGNIN_ADDRESS_BURST: '50',
};

describe('auth servers of two namespaces on one Redis', () => {
  const s = perDescribe(async (start) => {
    const redis = await start.redis();
    const [a, b] = [
      await start.authStack({
        redisUrl: redis.url,
        authEnv: { ...THROTTLE, AUTH_NAMESPACE: 'team-a' },
      }),
      await start.authStack({
        redisUrl: redis.url,
        authEnv: { ...THROTTLE, AUTH_NAMESPACE: 'team-b' },
      }),
    ];
    return { redis, a, b, admin: start.redisClient(redis.url) };
  });

  it("a consent given in one namespace is not the other's: the same user and client id are asked again there", async () => {
    const first = await authorize({
      issuer: s.a.issuer,
      clientId: 'demo-client',
      redirectUri: s.a.redirectUri,
    });
    expect(first.consentShown).toBe(true);
    expect(
      (
        await authorize({
          issuer: s.a.issuer,
          clientId: 'demo-client',
          redirectUri: s.a.redirectUri,
        })
      ).consentShown,
    ).toBe(false);
    const other = await authorize({
      issuer: s.b.issuer,
      clientId: 'demo-client',
      redirectUri: s.b.redirectUri,
    });
    expect(other.consentShown).toBe(true);
  });

  it("guesses against one namespace's server do not lock the user out of the other's", async () => {
    const guesses: number[] = [];
    for (let i = 0; i < 5; i++)
      guesses.push(
        (
          await trySignIn(s.a.issuer, s.a.redirectUri, 'bob', 'guess', {
            'x-forwarded-for': `198.51.100.${i + 1}`,
          })
        ).status,
      );
    expect(guesses.slice(-1)).toEqual([429]);
    const elsewhere = await trySignIn(s.b.issuer, s.b.redirectUri, 'bob', 'builder', {
      'x-forwarded-for': '192.0.2.7',
    });
    expect(elsewhere.status).toBe(303);
  });

  it('every key either server wrote carries its namespace', async () => {
    const keys = await s.admin.keys('*');
    expect(keys.length).toBeGreaterThan(0);
    expect(
      keys.filter(
        (k) => !k.startsWith(authKeyPrefix('team-a')) && !k.startsWith(authKeyPrefix('team-b')),
      ),
    ).toEqual([]);
    expect(keys.some((k) => k.startsWith(authKeyPrefix('team-a')))).toBe(true);
    expect(keys.some((k) => k.startsWith(authKeyPrefix('team-b')))).toBe(true);
  });
});

describe("an auth server on its namespace's own Redis user (ACL)", () => {
  const s = perDescribe(async (start) => {
    const redis = await start.redis(['--requirepass', 'admin-Vd4s8Kq1Wn6Ty3Bp'], {
      password: 'admin-Vd4s8Kq1Wn6Ty3Bp',
    });
    const users = createTenantRedisUsers();
    start.defer(() => users.close());
    const url = (await users.grant(redis.url, 'team-a', 'auth')) as string;
    return {
      stack: await start.authStack({ redisUrl: url, authEnv: { AUTH_NAMESPACE: 'team-a' } }),
    };
  });

  it('signs in, consents, issues, refreshes, revokes and introspects with nothing but that user', async () => {
    const { stack } = s;
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const client = { client_id: 'demo-client', client_secret: SECRETS.post };
    const issued = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      ...client,
    });
    expect(issued.status).toBe(200);
    const refreshed = await tokenRequest(stack.issuer, {
      grant_type: 'refresh_token',
      refresh_token: String(issued.json['refresh_token']),
      ...client,
    });
    expect(refreshed.status).toBe(200);
    const form = (path: string, body: Record<string, string>) =>
      fetch(`${stack.issuer}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body),
      });
    const token = String(refreshed.json['access_token']);
    expect((await form('/revoke', { token, ...client })).status).toBe(200);
    expect(await (await form('/introspect', { token, ...client })).json()).toMatchObject({
      active: false,
    });
  });
});

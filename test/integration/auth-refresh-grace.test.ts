// The refresh-token reuse grace window on two replicas sharing Redis, and on the memory store: a
// client whose replicas refresh with the same token at once keeps its user signed in (every
// request gets the same successor); the same token presented after the window still revokes
// the family, successor included.
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS } from '../harness/auth-stack.ts';

const GRACE_S = 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(['memory', 'redis'] as const)(
  'refresh-token reuse grace window (%s store)',
  (store) => {
    const stack = perDescribe(async (start) => {
      const password = 'auth-stack-redis-password';
      const redis =
        store === 'redis'
          ? await start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: password }), {
              password,
            })
          : undefined;
      return start.authStack({
        replicas: store === 'redis' ? 2 : 1,
        authEnv: { AUTH_REFRESH_REUSE_GRACE_SECONDS: String(GRACE_S) },
        ...(redis !== undefined ? { redisUrl: redis.url } : {}),
      });
    });
    const replica = (i: number) => stack.authUrls[i % stack.authUrls.length] ?? stack.issuer;
    const refresh = (i: number, token: string) =>
      tokenRequest(replica(i), {
        grant_type: 'refresh_token',
        refresh_token: token,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });

    async function firstRefreshToken(): Promise<string> {
      const { location } = await authorize({
        issuer: stack.issuer,
        clientId: 'demo-client',
        redirectUri: stack.redirectUri,
      });
      const res = await tokenRequest(stack.issuer, {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code') ?? '',
        redirect_uri: stack.redirectUri,
        client_id: 'demo-client',
        client_secret: SECRETS.post,
      });
      expect(res.status).toBe(200);
      return String(res.json['refresh_token']);
    }

    it('replicas refreshing with one token at once all succeed and get the same successor, which keeps working', async () => {
      const r0 = await firstRefreshToken();
      const answers = await Promise.all([0, 1, 2, 3].map((i) => refresh(i, r0)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      const successors = new Set(answers.map((a) => String(a.json['refresh_token'])));
      expect(successors.size).toBe(1);
      // Each got its own access token.
      expect(new Set(answers.map((a) => String(a.json['access_token']))).size).toBe(4);
      const next = await refresh(1, [...successors][0] ?? '');
      expect(next.status).toBe(200);
    });

    it('the rotated token presented after the window revokes the family, successor included', async () => {
      const r0 = await firstRefreshToken();
      const first = await refresh(0, r0);
      expect(first.status).toBe(200);
      await sleep(GRACE_S * 1000 + 500);
      const late = await refresh(1, r0);
      expect(late.status).toBe(400);
      expect(late.json['error']).toBe('invalid_grant');
      const successor = await refresh(0, String(first.json['refresh_token']));
      expect(successor.status).toBe(400);
    });
  },
);

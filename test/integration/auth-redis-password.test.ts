// The auth server against a Redis that requires a password, as the chart runs its bundled
// auth-redis (redis-server --requirepass from the generated Secret, the chart's own arguments) and as
// the operator hands it the URL (REDIS_URL from a secretKeyRef, so the process sees it in its env):
// a code flow stores its state in that Redis, the password appears in no log line, and with a wrong
// password the process stops at start (the pod would crash-loop, visibly) rather than falling back
// to memory, again without printing the password it was given.
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { authorize, tokenRequest } from '../harness/auth-flow.ts';
import { SECRETS, startStack } from '../harness/auth-stack.ts';

const PASSWORD = 'Zq7w1Lr0p9XkT3vB6nY2mC8dF5gH4jK0';

describe('auth server with a password-protected Redis', () => {
  const redis = perDescribe((start) =>
    start.redis(chartRedisArgs('auth-redis', { REDIS_PASSWORD: PASSWORD }), { password: PASSWORD }),
  );
  const stack = perDescribe((start) => start.authStack({ redisUrl: redis.url }));

  it('refuses clients without the password (requirepass from the chart arguments is on)', async () => {
    const anonymous = spawnSync('redis-cli', ['-p', String(redis.port), 'DBSIZE'], {
      encoding: 'utf8',
    });
    expect(anonymous.stdout + anonymous.stderr).toMatch(/NOAUTH Authentication required/);
  });

  it('runs the code flow with its state in that Redis, and logs no password', async () => {
    const { location } = await authorize({
      issuer: stack.issuer,
      clientId: 'demo-client',
      redirectUri: stack.redirectUri,
    });
    const token = await tokenRequest(stack.issuer, {
      grant_type: 'authorization_code',
      code: location.searchParams.get('code') ?? '',
      redirect_uri: stack.redirectUri,
      client_id: 'demo-client',
      client_secret: SECRETS.post,
    });
    expect(token.status).toBe(200);
    const admin = new Redis(redis.url);
    try {
      expect(await admin.dbsize()).toBeGreaterThan(0);
    } finally {
      admin.disconnect();
    }
    for (const line of stack.programs[0]?.lines ?? []) expect(line).not.toContain(PASSWORD);
  });

  it('with a wrong password, the auth server exits at start and prints no password', async () => {
    const failure = await startStack({
      redisUrl: `redis://:not-the-password@127.0.0.1:${redis.port}`,
    }).then(
      async (s) => {
        await s.stop();
        return undefined;
      },
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    expect(failure).toMatch(/exited with .* before listening/);
    expect(failure).not.toContain('not-the-password');
  });
});

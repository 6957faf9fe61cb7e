import { describe, expect, it } from 'vitest';
import { resourceSettings } from '../../operator/config-settings.ts';
import { flagToEnvName, loadOperatorConfig } from '../../operator/config.ts';

describe('operator settings', () => {
  it('reads the environment the chart sets', () => {
    const config = loadOperatorConfig({
      PORT: '8081',
      POD_NAME: 'op-1',
      PORTCULLIS_WATCH_NAMESPACES: 'a, b',
      PORTCULLIS_LEADER_ELECTION: 'true',
      PORTCULLIS_LEADER_ELECTION_NAMESPACE: 'portcullis-system',
      PORTCULLIS_LEASE_NAME: 'rel-operator',
      PORTCULLIS_SIDECAR_IMAGE: 'portcullis/sidecar:1.0',
      PORTCULLIS_AUTH_SERVER_IMAGE: 'portcullis/auth-server:1.0',
      PORTCULLIS_IMAGE_PULL_POLICY: 'Never',
      PORTCULLIS_DEFAULT_REDIS_URL: 'redis://rel-redis:6379',
      PORTCULLIS_ISSUER_URL: 'https://auth.{namespace}.example.com',
      PORTCULLIS_USERS_SECRET: 'users',
      PORTCULLIS_USERS_SECRET_KEY: 'u.json',
      PORTCULLIS_ACCESS_TOKEN_TTL_SECONDS: '600',
      UNRELATED: 'ignored',
    });
    expect(config.PORTCULLIS_WATCH_NAMESPACES).toEqual(['a', 'b']);
    expect(resourceSettings(config)).toMatchObject({
      sidecarImage: 'portcullis/sidecar:1.0',
      imagePullPolicy: 'Never',
      defaultRedisUrl: 'redis://rel-redis:6379',
      usersSecretName: 'users',
      usersSecretKey: 'u.json',
      accessTokenTtlSeconds: 600,
    });
  });

  it("the auth servers' sign-in sessions and refresh grace window as the chart passes them (strings)", () => {
    expect(
      resourceSettings(
        loadOperatorConfig({
          PORTCULLIS_SIGN_IN_SESSIONS: 'false',
          PORTCULLIS_REFRESH_REUSE_GRACE_SECONDS: '0',
        }),
      ),
    ).toMatchObject({ refreshReuseGraceSeconds: 0 });
    expect(
      resourceSettings(loadOperatorConfig({ PORTCULLIS_SIGN_IN_SESSIONS: 'false' })).signInSessions,
    ).toBeUndefined();
    const on = resourceSettings(
      loadOperatorConfig({
        PORTCULLIS_SIGN_IN_SESSIONS: 'true',
        PORTCULLIS_SESSION_IDLE_SECONDS: '900',
        PORTCULLIS_SESSION_MAX_AGE_SECONDS: '3600',
      }),
    );
    expect(on.signInSessions).toEqual({ idleSeconds: 900, maxAgeSeconds: 3600 });
    expect(on.refreshReuseGraceSeconds).toBe(3);
  });

  it("the auth servers' Redis: its own when set, else the default one", () => {
    expect(
      resourceSettings(
        loadOperatorConfig({
          PORTCULLIS_DEFAULT_REDIS_URL: 'redis://limiter:6379',
          PORTCULLIS_AUTH_REDIS_URL: 'redis://auth:6379',
        }),
      ),
    ).toMatchObject({
      defaultRedisUrl: 'redis://limiter:6379',
      authRedisUrl: 'redis://auth:6379',
    });
    expect(
      resourceSettings(
        loadOperatorConfig({
          PORTCULLIS_DEFAULT_REDIS_URL: 'redis://limiter:6379',
          PORTCULLIS_AUTH_REDIS_URL: '',
        }),
      ).authRedisUrl,
    ).toBe('redis://limiter:6379');
    expect(resourceSettings(loadOperatorConfig({})).authRedisUrl).toBeUndefined();
    expect(() => loadOperatorConfig({ PORTCULLIS_AUTH_REDIS_URL: 'http://auth:6379' })).toThrow(
      /PORTCULLIS_AUTH_REDIS_URL: a redis:\/\/ or rediss:\/\/ URL/,
    );
  });

  it('an empty default Redis (chart value unset) means none', () => {
    expect(
      loadOperatorConfig({ PORTCULLIS_DEFAULT_REDIS_URL: '' }).PORTCULLIS_DEFAULT_REDIS_URL,
    ).toBeUndefined();
  });

  it('flags override env, with or without =', () => {
    const config = loadOperatorConfig({ PORT: '1' }, [
      '--port=2',
      '--watch-namespaces',
      'x',
      '--leader-election',
      'false',
    ]);
    expect(config.PORT).toBe(2);
    expect(config.PORTCULLIS_WATCH_NAMESPACES).toEqual(['x']);
    expect(config.PORTCULLIS_LEADER_ELECTION).toBe(false);
    expect(flagToEnvName('--sidecar-image')).toBe('PORTCULLIS_SIDECAR_IMAGE');
  });

  it('names the bad setting', () => {
    expect(() => loadOperatorConfig({ PORTCULLIS_IMAGE_PULL_POLICY: 'Sometimes' })).toThrow(
      /PORTCULLIS_IMAGE_PULL_POLICY/,
    );
    expect(() => loadOperatorConfig({}, ['--no-such-flag', '1'])).toThrow(
      /unknown flag --no-such-flag/,
    );
    expect(() =>
      loadOperatorConfig({
        PORTCULLIS_LEASE_DURATION_MS: '5000',
        PORTCULLIS_RENEW_DEADLINE_MS: '6000',
      }),
    ).toThrow(/RENEW_DEADLINE/);
  });
});

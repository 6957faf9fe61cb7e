import { describe, expect, it } from 'vitest';
import { hashClientSecret, loadAuthServerConfig } from '../../lib/config/auth-server.ts';
import { clientRegistrySchema } from '../../lib/config/client-registry.ts';
import { signingKeysFileSchema } from '../../lib/config/signing-keys-file.ts';
import { generateSigningJwks } from '../../lib/config/signing-keys.ts';
import {
  authServerDeployment,
  authServerFiles,
  authServerService,
} from '../../operator/resources/auth/deployment.ts';
import type { ContainerResources } from '../../operator/resources/shared/container-resources.ts';
import { clientRegistrySecret } from '../../operator/resources/auth/client-registry-secret.ts';
import { fromBase64 } from '../../operator/resources/shared/metadata.ts';
import {
  credentialsOf,
  generateCredentials,
  oauthClientSecret,
} from '../../operator/resources/auth/oauth-client-secret.ts';
import {
  planSigningKeys,
  signingKeysSecret,
  signingKeysStateOf,
} from '../../operator/resources/auth/signing-keys-secret.ts';
import { oauthClient, settings } from './operator-fixtures.ts';

describe('OAuthClient -> Secret and auth-server objects', () => {
  it('the client Secret holds client_id and client_secret and reads back', () => {
    const c = oauthClient();
    const creds = generateCredentials(c);
    expect(creds.clientId).toMatch(/^demo-app-[0-9a-f]{12}$/);
    expect(creds.clientSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const secret = oauthClientSecret(c, creds, undefined);
    expect(secret.metadata.name).toBe('demo-app-oauth-client');
    expect(secret.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'OAuthClient',
      name: 'demo-app',
      controller: true,
    });
    expect(credentialsOf(secret)).toEqual(creds);
    expect(generateCredentials(c, creds.clientId).clientId).toBe(creds.clientId);
  });

  it('the registry lists secret hashes, never secrets, and passes the auth server schema', () => {
    const c = oauthClient();
    const creds = generateCredentials(c);
    const secret = clientRegistrySecret('team-a', [{ client: c, credentials: creds }]);
    const text = fromBase64((secret['data'] as Record<string, string>)['clients.json']) ?? '';
    expect(text).not.toContain(creds.clientSecret);
    const registry = clientRegistrySchema.parse(JSON.parse(text));
    expect(registry.clients).toEqual([
      {
        client_id: creds.clientId,
        client_secret_hash: hashClientSecret(creds.clientSecret),
        display_name: 'Demo App',
        redirect_uris: ['https://app.example.com/callback'],
        scopes: ['profile', 'email'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ]);
    expect(secret.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'portcullis.dev/v1alpha1',
        kind: 'OAuthClient',
        name: 'demo-app',
        uid: 'uid-demo-app',
      },
    ]);
  });

  it('the registry carries resourceServer, allowInsecureRedirectUris, skipConsent and tokenEndpointAuthMethods when set, and nothing when not', () => {
    const plain = oauthClient('plain-app');
    const flagged = oauthClient('lab-app');
    flagged.spec = {
      ...flagged.spec,
      redirectUris: ['http://lab.example.test/cb'],
      allowInsecureRedirectUris: true,
      resourceServer: true,
      skipConsent: true,
      tokenEndpointAuthMethods: ['client_secret_basic', 'client_secret_post'],
      postLogoutRedirectUris: ['http://lab.example.test/signed-out'],
    };
    const [plainCreds, flaggedCreds] = [generateCredentials(plain), generateCredentials(flagged)];
    const secret = clientRegistrySecret('team-a', [
      { client: plain, credentials: plainCreds },
      { client: flagged, credentials: flaggedCreds },
    ]);
    const text = fromBase64((secret['data'] as Record<string, string>)['clients.json']) ?? '';
    const byId = new Map(
      clientRegistrySchema.parse(JSON.parse(text)).clients.map((c) => [c.client_id, c]),
    );
    expect(byId.get(flaggedCreds.clientId)).toMatchObject({
      redirect_uris: ['http://lab.example.test/cb'],
      allow_insecure_redirect_uris: true,
      resource_server: true,
      skip_consent: true,
      token_endpoint_auth_methods: ['client_secret_basic', 'client_secret_post'],
      post_logout_redirect_uris: ['http://lab.example.test/signed-out'],
    });
    expect(byId.get(plainCreds.clientId)).not.toHaveProperty('skip_consent');
    expect(byId.get(plainCreds.clientId)).not.toHaveProperty('token_endpoint_auth_methods');
    expect(byId.get(plainCreds.clientId)).not.toHaveProperty('allow_insecure_redirect_uris');
    expect(byId.get(plainCreds.clientId)).not.toHaveProperty('resource_server');
  });

  it('the auth server V8 old space follows its memory limit (half of it), 192 MiB without a limit', () => {
    const nodeOptions = (resources: ContainerResources) => {
      const dep = authServerDeployment(
        'team-a',
        { ...settings, authServerResources: resources },
        [],
      ) as unknown as {
        spec: {
          template: {
            spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> };
          };
        };
      };
      return dep.spec.template.spec.containers[0]?.env.find((e) => e.name === 'NODE_OPTIONS')
        ?.value;
    };
    expect(nodeOptions({ limits: { memory: '256Mi' } })).toBe(
      '--max-semi-space-size=4 --max-old-space-size=128',
    );
    expect(nodeOptions({ requests: { memory: '64Mi' } })).toBe(
      '--max-semi-space-size=4 --max-old-space-size=192',
    );
  });

  it('sign-in sessions reach the auth server only when the chart turns them on, with their lifetimes; the refresh grace window always', () => {
    const envOf = (extra: Partial<typeof settings>) => {
      const dep = authServerDeployment('team-a', { ...settings, ...extra }, []) as unknown as {
        spec: {
          template: {
            spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> };
          };
        };
      };
      return new Map(
        (dep.spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]),
      );
    };
    expect(envOf({}).has('AUTH_SIGN_IN_SESSIONS')).toBe(false);
    expect(envOf({}).get('AUTH_REFRESH_REUSE_GRACE_SECONDS')).toBe('3');
    expect(envOf({ refreshReuseGraceSeconds: 0 }).get('AUTH_REFRESH_REUSE_GRACE_SECONDS')).toBe(
      '0',
    );
    const on = envOf({ signInSessions: { idleSeconds: 600, maxAgeSeconds: 7200 } });
    expect([
      on.get('AUTH_SIGN_IN_SESSIONS'),
      on.get('AUTH_SESSION_IDLE_SECONDS'),
      on.get('AUTH_SESSION_MAX_AGE_SECONDS'),
    ]).toEqual(['true', '600', '7200']);
  });

  it('the auth-server Deployment mounts the three files where its config points', () => {
    const dep = authServerDeployment('team-a', settings, [oauthClient()]) as unknown as {
      spec: {
        replicas: number;
        template: {
          spec: {
            containers: Array<{ command: string[]; env: Array<{ name: string; value: string }> }>;
            volumes: Array<{ secret?: { secretName: string } }>;
          };
        };
      };
    };
    const [c] = dep.spec.template.spec.containers;
    expect(c?.command).toEqual(['node', 'dist/auth-server/main.mjs']);
    const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      AUTH_ISSUER: 'http://portcullis-auth-server.team-a.svc',
      AUTH_AUDIENCE: 'urn:portcullis:user-service', // what a jwt-keyed RateLimitRoute of the namespace expects
      AUTH_CLIENTS_FILE: authServerFiles.clients,
      AUTH_USERS_FILE: authServerFiles.users,
      AUTH_KEYS_FILE: authServerFiles.keys,
      REDIS_URL: 'redis://auth-redis:6379',
      PORT: '9000',
      // The bundle's V8 caps: old space at half the default 384Mi limit.
      NODE_ENV: 'production',
      NODE_OPTIONS: '--max-semi-space-size=4 --max-old-space-size=192',
      MALLOC_ARENA_MAX: '2',
    });
    expect(
      dep.spec.template.spec.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : [])),
    ).toEqual(['portcullis-auth-clients', 'portcullis-auth-users', 'portcullis-auth-signing-keys']);
    expect(dep.spec.replicas).toBe(2);
    const noRedis = authServerDeployment(
      'team-a',
      { ...settings, authRedisUrl: undefined },
      [],
    ) as unknown as { spec: { replicas: number } };
    expect(noRedis.spec.replicas).toBe(1);
  });

  it('the auth-server container declares its metrics port as `metrics`, where its config makes it listen; the Service publishes only http', () => {
    const dep = authServerDeployment('team-a', settings, [oauthClient()]) as unknown as {
      spec: {
        template: {
          spec: {
            containers: Array<{
              env: Array<{ name: string; value: string }>;
              ports: Array<{ name: string; containerPort: number }>;
            }>;
          };
        };
      };
    };
    const [c] = dep.spec.template.spec.containers;
    const env = Object.fromEntries((c?.env ?? []).map((e) => [e.name, e.value]));
    const config = loadAuthServerConfig({ ...env, AUTH_CLIENTS_FILE: 'c', AUTH_USERS_FILE: 'u' });
    expect(c?.ports.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', config.PORT],
      ['metrics', config.AUTH_METRICS_PORT],
    ]);
    expect(config.AUTH_METRICS_PORT).toBe(9090);
    const svc = authServerService('team-a', settings, [oauthClient()]) as unknown as {
      spec: { ports: Array<{ name: string }> };
    };
    expect(svc.spec.ports.map((p) => p.name)).toEqual(['http']);
  });
});

describe('signing-key rotation plan', () => {
  const policy = { accessTokenTtlSeconds: 300, signingKeyRotationMs: 24 * 3600_000 };
  const day = 24 * 3600_000;

  it('no keys yet: generate one', () => {
    expect(planSigningKeys(undefined, 0, policy)).toMatchObject({ generate: true, keep: [] });
  });

  it('rotates after the interval, keeps the old key until its tokens expired, then drops it', async () => {
    const first = await generateSigningJwks();
    const kid1 = first.keys[0]?.kid ?? '';
    const t0 = Date.UTC(2026, 0, 1);
    const s1 = { file: first, createdAt: { [kid1]: t0 } };
    const p1 = planSigningKeys(s1, t0 + day - 1, policy);
    expect(p1.generate).toBe(false);
    expect(p1.recheckInMs).toBe(1000); // floor of 1 s; the rotation is 1 ms away
    const p2 = planSigningKeys(s1, t0 + day, policy);
    expect(p2.generate).toBe(true);
    expect(p2.keep.map((k) => k.kid)).toEqual([kid1]);

    const rotated = await generateSigningJwks({ existing: { keys: p2.keep } });
    const kid2 = rotated.keys[0]?.kid ?? '';
    const s2 = { file: rotated, createdAt: { [kid1]: t0, [kid2]: t0 + day } };
    // within access-token lifetime + margin: the old public key stays published
    expect(planSigningKeys(s2, t0 + day + 300_000, policy).keep.map((k) => k.kid)).toEqual([
      kid2,
      kid1,
    ]);
    expect(planSigningKeys(s2, t0 + day + 360_000, policy).keep.map((k) => k.kid)).toEqual([kid2]);
  });

  it('the Secret round-trips the keys and their creation times', async () => {
    const file = await generateSigningJwks();
    const kid = file.keys[0]?.kid ?? '';
    const secret = signingKeysSecret('team-a', { file, createdAt: { [kid]: 42 } }, [oauthClient()]);
    const state = signingKeysStateOf(secret);
    expect(state?.createdAt).toEqual({ [kid]: 42 });
    expect(signingKeysFileSchema.parse(state?.file).keys[0]?.kid).toBe(kid);
  });
});

// planAuthServer and planOAuthClient: the auth server of a namespace and an OAuthClient's Secret
// and status as pure functions of what the reconcilers read. No API server: each case is one call.
import { describe, expect, it } from 'vitest';
import {
  planAuthServer,
  registeredClients,
  type AuthServerObserved,
} from '../../operator/controllers/plan-auth-server.ts';
import {
  oauthClientReadyState,
  parseOAuthClient,
  planOAuthClient,
} from '../../operator/controllers/plan-oauth-client.ts';
import { EventReasons, Reasons } from '../../operator/controllers/conditions.ts';
import {
  oauthClientSecret,
  ROTATE_SECRET_ANNOTATION,
} from '../../operator/resources/auth/oauth-client-secret.ts';
import { hashClientSecret } from '../../lib/config/auth-server.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { clientObject, oauthClient, settings } from './operator-fixtures.ts';

const credentials = { clientId: 'demo-app-1234', clientSecret: 's3cret-s3cret-s3cret' };
const usersSecret: KubeObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'portcullis-auth-users', namespace: 'team-a' },
  data: { 'users.json': 'W10=' },
};
const observed = (more: Partial<AuthServerObserved> = {}): AuthServerObserved => ({
  clients: [oauthClient()],
  clientSecrets: [],
  usersSecret,
  ...more,
});
type Plan = ReturnType<typeof planAuthServer>;
const names = (plan: Plan) =>
  plan.steps.flatMap((s) => ('object' in s ? [`${s.object.kind} ${s.object.metadata.name}`] : []));
const stale = (plan: Plan) =>
  plan.steps.flatMap((s) => ('stale' in s ? [{ name: s.stale, cache: s.cache }] : []));

describe('planAuthServer', () => {
  it('two replicas with policies on: the Deployment, the Service, a budget and the NetworkPolicy; no warnings', () => {
    const plan = planAuthServer('team-a', settings, observed());
    expect(plan.registry.metadata.name).toBe('portcullis-auth-clients');
    expect(names(plan)).toEqual([
      'Deployment portcullis-auth-server',
      'Service portcullis-auth-server',
      'PodDisruptionBudget portcullis-auth-server',
      'NetworkPolicy portcullis-auth-server',
    ]);
    // A plain auth Redis URL: any copy of a Secret is stale.
    expect(stale(plan)).toEqual([{ name: 'portcullis-auth-redis', cache: 'secrets' }]);
    expect(plan.warnings).toEqual([]);
  });

  it('one replica, policies off: neither budget nor policy, both stale', () => {
    const plan = planAuthServer(
      'team-a',
      { ...settings, authServerReplicas: 1, routeNetworkPolicy: false },
      observed(),
    );
    expect(names(plan)).toEqual([
      'Deployment portcullis-auth-server',
      'Service portcullis-auth-server',
    ]);
    expect(stale(plan).map((s) => s.cache)).toEqual([
      'secrets',
      'podDisruptionBudgets',
      'networkPolicies',
    ]);
  });

  describe('the auth Redis from a Secret', () => {
    const secretSettings = {
      ...settings,
      authRedisUrl: undefined,
      authRedisSecret: { namespace: 'portcullis-system', name: 'creds', key: 'redis-url' },
    };

    it("the namespace user's copy goes before the Deployment that mounts it", () => {
      const plan = planAuthServer('team-a', secretSettings, observed({ redisUrlData: 'eA==' }));
      expect(names(plan)[0]).toBe('Secret portcullis-auth-redis');
      expect(stale(plan).some((s) => s.name === 'portcullis-auth-redis')).toBe(false);
    });

    it('the source missing: a RedisSecretMissing warning naming it, the copy neither written nor deleted', () => {
      const plan = planAuthServer('team-a', secretSettings, observed());
      expect(names(plan).some((n) => n.startsWith('Secret'))).toBe(false);
      expect(stale(plan).some((s) => s.name === 'portcullis-auth-redis')).toBe(false);
      expect(plan.warnings.map((w) => w.reason)).toEqual([EventReasons.RedisSecretMissing]);
      expect(plan.warnings[0]?.message).toContain('portcullis-system/creds');
    });

    it('Redis unreachable: RedisUserFailed, the copy left as it is', () => {
      const plan = planAuthServer(
        'team-a',
        secretSettings,
        observed({ redisUserProblem: 'ECONNREFUSED' }),
      );
      expect(names(plan).some((n) => n.startsWith('Secret'))).toBe(false);
      expect(plan.warnings).toEqual([
        expect.objectContaining({
          reason: EventReasons.RedisUserFailed,
          message: expect.stringContaining('ECONNREFUSED'),
        }),
      ]);
    });
  });

  it('the users Secret missing, or without its key: a UsersSecretMissing warning saying which', () => {
    expect(
      planAuthServer('team-a', settings, observed({ usersSecret: undefined })).warnings[0]?.message,
    ).toContain('Secret portcullis-auth-users does not exist');
    const noKey = { ...usersSecret, data: {} };
    expect(
      planAuthServer('team-a', settings, observed({ usersSecret: noKey })).warnings[0],
    ).toMatchObject({
      reason: EventReasons.UsersSecretMissing,
      message: expect.stringContaining('has no key users.json'),
    });
  });

  it('the registry lists a client only with a Secret this very OAuthClient controls', () => {
    const own = oauthClientSecret(oauthClient(), credentials, undefined);
    expect(registeredClients([oauthClient()], [own]).map((e) => e.credentials.clientId)).toEqual([
      credentials.clientId,
    ]);
    // A namesake's leftover (another uid) or no Secret at all: not listed.
    const leftover = {
      ...own,
      metadata: {
        ...own.metadata,
        ownerReferences: own.metadata.ownerReferences?.map((r) => ({ ...r, uid: 'uid-old' })),
      },
    };
    expect(registeredClients([oauthClient()], [leftover])).toEqual([]);
    expect(registeredClients([oauthClient()], [])).toEqual([]);
  });
});

describe('planOAuthClient', () => {
  const raw = clientObject();
  const own = oauthClientSecret(oauthClient(), credentials, undefined);

  it('an invalid spec: the InvalidSpec condition, nothing read or written', () => {
    const bad = { ...raw, spec: { displayName: 'x' } };
    expect(parseOAuthClient(bad).state).toMatchObject({
      status: 'False',
      reason: Reasons.InvalidSpec,
      message: expect.stringMatching(/^spec is invalid: .*; fix the OAuthClient$/),
    });
  });

  it('no Secret: create one', () => {
    expect(planOAuthClient(raw, oauthClient(), undefined)).toEqual({
      ok: true,
      secretName: 'demo-app-oauth-client',
      secret: { kind: 'create', rotation: undefined },
    });
  });

  it('its own Secret with credentials: keep them', () => {
    expect(planOAuthClient(raw, oauthClient(), own)).toMatchObject({
      ok: true,
      secret: { kind: 'keep', credentials },
    });
  });

  it('a Secret of that name owned by something else: SecretConflict, nothing written', () => {
    const foreign = { ...own, metadata: { ...own.metadata, ownerReferences: [] } };
    expect(planOAuthClient(raw, oauthClient(), foreign)).toMatchObject({
      ok: false,
      secretName: 'demo-app-oauth-client',
      state: { reason: Reasons.SecretConflict },
    });
  });

  it('a rotation asked for: new credentials under the same client id; asked for again with the same value: kept', () => {
    const asked = {
      ...raw,
      metadata: { ...raw.metadata, annotations: { [ROTATE_SECRET_ANNOTATION]: 'r1' } },
    };
    expect(planOAuthClient(asked, oauthClient(), own)).toMatchObject({
      ok: true,
      secret: {
        kind: 'rotate',
        clientId: credentials.clientId,
        rotation: 'r1',
        why: 'rotation "r1" was asked for',
      },
    });
    const done = oauthClientSecret(oauthClient(), credentials, 'r1');
    expect(planOAuthClient(asked, oauthClient(), done)).toMatchObject({
      ok: true,
      secret: { kind: 'keep', rotation: 'r1' },
    });
  });

  it('a Secret left over from an older OAuthClient of this name: rotated, no client id kept', () => {
    const older = {
      ...own,
      metadata: {
        ...own.metadata,
        ownerReferences: own.metadata.ownerReferences?.map((r) => ({ ...r, uid: 'uid-old' })),
      },
    };
    expect(planOAuthClient(raw, oauthClient(), older)).toMatchObject({
      ok: true,
      secret: { kind: 'rotate', clientId: undefined, why: 'the Secret held no usable credentials' },
    });
  });

  it('Ready once the registry lists the client with this very secret', () => {
    expect(
      oauthClientReadyState(
        credentials,
        'demo-app-oauth-client',
        new Map([[credentials.clientId, hashClientSecret(credentials.clientSecret)]]),
      ),
    ).toMatchObject({ status: 'True', reason: Reasons.Registered });
    expect(
      oauthClientReadyState(
        credentials,
        'demo-app-oauth-client',
        new Map([[credentials.clientId, hashClientSecret('another')]]),
      ),
    ).toMatchObject({ status: 'False', reason: Reasons.Registering });
    expect(oauthClientReadyState(credentials, 'demo-app-oauth-client', new Map())).toMatchObject({
      status: 'False',
      reason: Reasons.Registering,
    });
  });
});

// The chart's ValidatingAdmissionPolicy for RateLimitPolicies on a real API server: the operator
// adds an ExternalAuth filter to every HTTPRoute a policy targets, with its own rights, so someone
// bound only to portcullis-edit could otherwise put any route of the namespace behind a limiter of
// their choosing (rate 1, or a key header nobody sends: every request refused). The author must be
// allowed to update each targeted HTTPRoute.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, startOperatorEnv, type OperatorEnv } from '../harness/k8s/operator-env.ts';

const TEAM = 'team-w';
let env: OperatorEnv;

const policy = (name: string, route: string, extra: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitPolicy',
    metadata: { name, namespace: TEAM },
    spec: {
      targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: route }],
      limiter: { replenishRate: 1, burstCapacity: 10 },
      ...extra,
    },
  });
const as = (user: string, yaml: string) =>
  env.cluster.kubectl(['apply', '--as', user, '-f', '-'], { input: yaml });
async function admin(args: readonly string[], input?: string) {
  const r = await env.cluster.kubectl(args, input === undefined ? {} : { input });
  expect(r.code, r.stderr).toBe(0);
}

beforeAll(async () => {
  env = await startOperatorEnv([TEAM]);
  // mallory: portcullis-edit only. alice: portcullis-edit, and may update HTTPRoute shop.
  await admin([
    '-n',
    TEAM,
    'create',
    'rolebinding',
    'mallory-edit',
    '--clusterrole=portcullis-edit',
    '--user=mallory',
  ]);
  await admin([
    '-n',
    TEAM,
    'create',
    'rolebinding',
    'alice-edit',
    '--clusterrole=portcullis-edit',
    '--user=alice',
  ]);
  // As YAML: kubectl create role looks the resource up, and Gateway API is not installed here.
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'shop-route', namespace: TEAM },
    rules: [
      {
        apiGroups: ['gateway.networking.k8s.io'],
        resources: ['httproutes'],
        resourceNames: ['shop'],
        verbs: ['update'],
      },
    ],
  };
  await admin(['apply', '-f', '-'], stringify(role));
  await admin([
    '-n',
    TEAM,
    'create',
    'rolebinding',
    'alice-shop-route',
    '--role=shop-route',
    '--user=alice',
  ]);
  await eventually('the policy-rights policy in force', async () => {
    const probe = await env.cluster.kubectl(
      ['apply', '--as', 'mallory', '--dry-run=server', '-f', '-'],
      { input: policy('probe', 'shop') },
    );
    return probe.code !== 0 && probe.stderr.includes('you need the right to update them');
  });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

describe('a RateLimitPolicy grants no more than its author has', () => {
  it('portcullis-edit alone cannot target an HTTPRoute; the right to update that route can, and only that route', async () => {
    const refused = await as('mallory', policy('limit-shop', 'shop'));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      'the operator adds an ExternalAuth filter to each targeted HTTPRoute; you need the right to update them',
    );
    expect((await as('alice', policy('limit-shop', 'shop'))).code).toBe(0);
    const other = await as('alice', policy('limit-admin', 'admin'));
    expect(other.code).not.toBe(0);
    // Changing the targets of an admitted policy is checked again.
    const retarget = await as('alice', policy('limit-shop', 'admin'));
    expect(retarget.code).not.toBe(0);
  });

  it('a Gateway target needs no route right (nothing is written to it); a Secret the author may not read cannot be named', async () => {
    const gateway = stringify({
      apiVersion: 'portcullis.dev/v1alpha1',
      kind: 'RateLimitPolicy',
      metadata: { name: 'edge', namespace: TEAM },
      spec: {
        targetRefs: [{ group: 'gateway.networking.k8s.io', kind: 'Gateway', name: 'public' }],
        limiter: { replenishRate: 1, burstCapacity: 10 },
      },
    });
    expect((await as('mallory', gateway)).code).toBe(0);
    const secret = await as(
      'alice',
      policy('with-redis', 'shop', {
        redis: { secretRef: { name: 'portcullis-auth-signing-keys', key: 'url' } },
      }),
    );
    expect(secret.code).not.toBe(0);
    expect(secret.stderr).toContain(
      'spec.redis.secretRef names Secret portcullis-auth-signing-keys, which you may not get',
    );
  });
});

// The chart's ValidatingAdmissionPolicies on a real API server. A route grants its author no more
// than the author has: someone bound only to portcullis-edit could, before, run any image, read
// any Secret of the namespace through spec.target.env (the auth server's signing keys, and so
// forge tokens), put a sidecar into any Deployment and pick system-node-critical, all through the
// operator's rights. And the operator's own account cannot write Deployments in kube-system or
// with host paths or privileged containers, whatever its ClusterRole allows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { eventually, startOperatorEnv, type OperatorEnv } from '../harness/k8s/operator-env.ts';

const TEAM = 'team-v';
let env: OperatorEnv;
let operatorKubeconfig: string;

const route = (name: string, spec: Record<string, unknown>) =>
  stringify({
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: TEAM },
    spec: { limiter: { replenishRate: 1, burstCapacity: 10 }, ...spec },
  });
const target = (extra: Record<string, unknown> = {}) => ({
  target: { image: 'example/web:1.0', port: 8081, replicas: 1, ...extra },
});
const envFromSecret = (secret: string) =>
  target({ env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: secret, key: 'k' } } }] });

async function as(user: string, yaml: string) {
  return env.cluster.kubectl(['apply', '--as', user, '-f', '-'], { input: yaml });
}
async function admin(args: readonly string[], input?: string) {
  const r = await env.cluster.kubectl(args, input === undefined ? {} : { input });
  expect(r.code, r.stderr).toBe(0);
}
const deployment = (name: string, namespace: string, pod: Record<string, unknown> = {}) =>
  stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'example/web:1.0' }], ...pod },
      },
    },
  });

beforeAll(async () => {
  env = await startOperatorEnv([TEAM]);
  // mallory: portcullis-edit only. alice: portcullis-edit, and may create and patch Deployments
  // and read the Secret app-config (not the auth server's keys).
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
  await admin([
    '-n',
    TEAM,
    'create',
    'role',
    'deployer',
    '--verb=create,patch,get',
    '--resource=deployments.apps',
  ]);
  await admin([
    '-n',
    TEAM,
    'create',
    'rolebinding',
    'alice-deployer',
    '--role=deployer',
    '--user=alice',
  ]);
  await admin([
    '-n',
    TEAM,
    'create',
    'role',
    'app-config',
    '--verb=get',
    '--resource=secrets',
    '--resource-name=app-config',
  ]);
  await admin([
    '-n',
    TEAM,
    'create',
    'rolebinding',
    'alice-app-config',
    '--role=app-config',
    '--user=alice',
  ]);
  await admin(['apply', '-f', '-'], deployment('web', TEAM));
  operatorKubeconfig = env.kubeconfig;
  // The API server enforces a new ValidatingAdmissionPolicy once its policy cache holds it (a few
  // seconds after the chart is applied): wait until a server-side dry run as mallory is refused.
  await eventually('the route-rights policy in force', async () => {
    const probe = await env.cluster.kubectl(
      ['apply', '--as', 'mallory', '--dry-run=server', '-f', '-'],
      { input: route('probe', target()) },
    );
    return (
      probe.code !== 0 && probe.stderr.includes('you need the right to create Deployments here')
    );
  });
}, 120_000);
afterAll(async () => {
  await env?.stop();
});

describe('a route grants no more than its author has', () => {
  it('portcullis-edit alone cannot run an image (spec.target) or add a sidecar to a Deployment (spec.targetRef)', async () => {
    const image = await as('mallory', route('run', target()));
    expect(image.code).not.toBe(0);
    expect(image.stderr).toContain('you need the right to create Deployments here');
    const injected = await as(
      'mallory',
      route('inject', { targetRef: { name: 'web', port: 8081 } }),
    );
    expect(injected.code).not.toBe(0);
    expect(injected.stderr).toContain(
      'spec.targetRef adds a sidecar to Deployment web: you need the right to patch it',
    );
  });

  it('a Secret the author may not read cannot be reached through spec.target.env or spec.redis.secretRef; one she may read can', async () => {
    const keys = await as('alice', route('steal', envFromSecret('portcullis-auth-signing-keys')));
    expect(keys.code).not.toBe(0);
    expect(keys.stderr).toContain('spec.target.env reads a Secret you may not get');
    const redis = await as(
      'alice',
      route('redis', {
        ...target(),
        redis: { secretRef: { name: 'portcullis-auth-redis', key: 'url' } },
      }),
    );
    expect(redis.code).not.toBe(0);
    expect(redis.stderr).toContain(
      'spec.redis.secretRef names Secret portcullis-auth-redis, which you may not get',
    );
    const own = await as('alice', route('own', envFromSecret('app-config')));
    expect(own.code, own.stderr).toBe(0);
    const injected = await as('alice', route('inject', { targetRef: { name: 'web', port: 8081 } }));
    expect(injected.code, injected.stderr).toBe(0);
  });

  it('a PriorityClass outside the allow-list (empty by default) is refused, even to an admin', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], {
      input: route('critical', { ...target(), priorityClassName: 'system-node-critical' }),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'spec.priorityClassName must be one of the classes the platform allows',
    );
  });

  it("the operator's own writes of a route (finalizers, not the spec) are not checked", async () => {
    const r = await env.cluster.kubectl([
      '--kubeconfig',
      operatorKubeconfig,
      '-n',
      TEAM,
      'patch',
      'ratelimitroute',
      'own',
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":["portcullis.dev/test"]}}',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await admin([
      '-n',
      TEAM,
      'patch',
      'ratelimitroute',
      'own',
      '--type=merge',
      '-p',
      '{"metadata":{"finalizers":null}}',
    ]);
  });
});

describe("the operator's account and Deployments", () => {
  const asOperator = (yaml: string) =>
    env.cluster.kubectl(['--kubeconfig', operatorKubeconfig, 'apply', '-f', '-'], { input: yaml });

  it('may write a plain Deployment in a team namespace', async () => {
    const r = await asOperator(deployment('plain', TEAM));
    expect(r.code, r.stderr).toBe(0);
  });

  it('may not write one in kube-system, with a hostPath volume, host networking or a privileged container', async () => {
    const cases: Array<[string, string]> = [
      [deployment('sys', 'kube-system'), 'does not write Deployments in kube-system'],
      [
        deployment('host', TEAM, { volumes: [{ name: 'root', hostPath: { path: '/' } }] }),
        'hostPath volumes',
      ],
      [deployment('net', TEAM, { hostNetwork: true }), "share the host's network"],
      [
        deployment('priv', TEAM, {
          containers: [
            { name: 'app', image: 'example/web:1.0', securityContext: { privileged: true } },
          ],
        }),
        'privileged containers',
      ],
    ];
    for (const [yaml, message] of cases) {
      const r = await asOperator(yaml);
      expect(r.code, message).not.toBe(0);
      expect(r.stderr).toContain(message);
    }
  });
});

// The chart's aggregated ClusterRoles on a real API server: with the rendered chart applied and
// the clusterrole-aggregation controller running, someone bound to the built-in `edit` role in a
// namespace can create and scale RateLimitRoutes there, someone bound to `view` can only read
// them, and neither writes status (the operator's).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import {
  startControllerManager,
  type ControllerManager,
} from '../harness/k8s/controller-manager.ts';

let cluster: Cluster;
let kcm: ControllerManager | undefined;
const NS = 'portcullis-system';
const TEAM = 'team-a';

const route = (name: string) =>
  stringify({
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: TEAM },
    spec: {
      target: { image: 'example/user-service:1.0', replicas: 1 },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    },
  });

const canI = async (user: string, ...what: string[]) =>
  (await cluster.kubectl(['auth', 'can-i', ...what, '--as', user, '-n', TEAM])).stdout.trim();

beforeAll(async () => {
  cluster = await startCluster();
  const crds = await cluster.kubectl(['apply', '--server-side', '-f', 'crds/']);
  expect(crds.code, crds.stderr).toBe(0);
  await cluster.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ratelimitroutes.portcullis.dev',
    'crd/oauthclients.portcullis.dev',
  ]);
  for (const ns of [NS, TEAM]) await cluster.kubectl(['create', 'namespace', ns]);
  for (const [user, role] of [
    ['alice', 'edit'],
    ['bob', 'view'],
  ] as const) {
    const bound = await cluster.kubectl([
      '-n',
      TEAM,
      'create',
      'rolebinding',
      `${user}-${role}`,
      `--clusterrole=${role}`,
      `--user=${user}`,
    ]);
    expect(bound.code, bound.stderr).toBe(0);
  }
  kcm = startControllerManager(cluster, ['clusterrole-aggregation']);
});
afterAll(async () => {
  await kcm?.stop();
  await cluster?.stop();
});

describe("the chart's aggregated ClusterRoles", () => {
  it('grant nothing on the two kinds through edit before the chart is applied', async () => {
    // The aggregation controller is running: edit gets the rules of the built-in aggregate-to-edit
    // roles (e.g. Deployments), but none for portcullis.dev until the chart's roles exist.
    for (let i = 0; i < 100 && (await canI('alice', 'create', 'deployments.apps')) !== 'yes'; i++)
      await new Promise((r) => setTimeout(r, 200));
    expect(await canI('alice', 'create', 'deployments.apps'), kcm?.log()).toBe('yes');
    expect(await canI('alice', 'create', 'ratelimitroutes.portcullis.dev')).toBe('no');
    expect(await canI('bob', 'list', 'ratelimitroutes.portcullis.dev')).toBe('no');
  });

  it('let an edit user create, scale and delete a RateLimitRoute once the chart is applied', async () => {
    const rendered = await cluster.helm([
      'template',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--kube-version',
      cluster.tools.kubernetesVersion,
    ]);
    expect(rendered.code, rendered.stderr).toBe(0);
    const applied = await cluster.kubectl(['apply', '--server-side', '-f', '-'], {
      input: rendered.stdout,
    });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain(
      'clusterrole.rbac.authorization.k8s.io/portcullis-edit serverside-applied',
    );
    for (
      let i = 0;
      i < 100 && (await canI('alice', 'create', 'ratelimitroutes.portcullis.dev')) !== 'yes';
      i++
    )
      await new Promise((r) => setTimeout(r, 200));

    const created = await cluster.kubectl(['apply', '--as', 'alice', '-f', '-'], {
      input: route('by-alice'),
    });
    expect(created.code, created.stderr + kcm?.log()).toBe(0);
    const scaled = await cluster.kubectl([
      '-n',
      TEAM,
      'scale',
      'rlr',
      'by-alice',
      '--replicas=3',
      '--as',
      'alice',
    ]);
    expect(scaled.code, scaled.stderr).toBe(0);
    const got = await cluster.kubectl([
      '-n',
      TEAM,
      'get',
      'rlr',
      'by-alice',
      '-o',
      'jsonpath={.spec.target.replicas}',
    ]);
    expect(got.stdout).toBe('3');
    expect(await canI('alice', 'create', 'oauthclients.portcullis.dev')).toBe('yes');
    expect(
      await canI('alice', 'patch', 'ratelimitroutes.portcullis.dev', '--subresource=status'),
    ).toBe('no');
    // admin aggregates the same rules.
    expect(await canI('carol', 'delete', 'ratelimitroutes.portcullis.dev')).toBe('no');
    const admin = await cluster.kubectl([
      '-n',
      TEAM,
      'create',
      'rolebinding',
      'carol-admin',
      '--clusterrole=admin',
      '--user=carol',
    ]);
    expect(admin.code, admin.stderr).toBe(0);
    expect(await canI('carol', 'delete', 'ratelimitroutes.portcullis.dev')).toBe('yes');
    const deleted = await cluster.kubectl([
      '-n',
      TEAM,
      'delete',
      'rlr',
      'by-alice',
      '--as',
      'alice',
      '--wait=false',
    ]);
    expect(deleted.code, deleted.stderr).toBe(0);
  });

  it('let a view user list RateLimitRoutes but not create, scale or delete them', async () => {
    const created = await cluster.kubectl(['apply', '-f', '-'], { input: route('for-bob') });
    expect(created.code, created.stderr).toBe(0);
    const listed = await cluster.kubectl(['-n', TEAM, 'get', 'rlr', '--as', 'bob', '-o', 'name']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('ratelimitroute.portcullis.dev/for-bob');
    expect(await canI('bob', 'list', 'oauthclients.portcullis.dev')).toBe('yes');
    const refused = await cluster.kubectl(['apply', '--as', 'bob', '-f', '-'], {
      input: route('by-bob'),
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/forbidden/i);
    for (const verb of ['create', 'update', 'delete'])
      expect(await canI('bob', verb, 'ratelimitroutes.portcullis.dev'), verb).toBe('no');
    expect(
      await canI('bob', 'update', 'ratelimitroutes.portcullis.dev', '--subresource=scale'),
    ).toBe('no');
  });
});

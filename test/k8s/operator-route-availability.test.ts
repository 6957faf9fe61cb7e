// A route's NetworkPolicy and PodDisruptionBudget, and the auth server's budget, on a real
// kube-apiserver: the operator (the chart's ServiceAccount, exactly the chart's RBAC) creates
// them, the API server accepts them as rendered (with topology spread, priority, startup probes
// and the sidecar's own resources in the pod template), the route's budget goes at one replica
// and comes back at two, and a no-op resync writes nothing. The chart's operator budget applies too.
import { describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  operatorForbidden,
  operatorIdle,
  operatorWrites,
  RELEASE_NS,
  resyncs,
} from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-avail';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const route = `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: shop, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081, replicas: 2 }
  limiter: { replenishRate: 5, burstCapacity: 10 }
  priorityClassName: gateway-high
  sidecar:
    resources: { requests: { cpu: 100m, memory: 96Mi }, limits: { memory: 384Mi } }
`;

const oauthClient = `apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: shop-app, namespace: ${NS} }
spec: { displayName: Shop, redirectUris: [https://shop.example.com/callback], scopes: [profile] }
`;

// Nothing connects to this Redis here; with one set the auth server runs 2 replicas (the default).
// The platform allows the route's PriorityClass (the chart's admission policy refuses any other).
const { env, operator } = operatorOnApiServer(
  [NS],
  'op-avail',
  {
    PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
    PORTCULLIS_DEFAULT_REDIS_URL: 'redis://redis.invalid:6379',
  },
  ['admissionPolicy.allowedPriorityClasses={gateway-high}'],
);

async function kubectl(args: string[], input?: string) {
  const r = await env.cluster.kubectl(args, input === undefined ? {} : { input });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

const scale = (replicas: number) =>
  kubectl([
    '-n',
    NS,
    'patch',
    'ratelimitroute',
    'shop',
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { target: { replicas } } }),
  ]);

describe('operator: NetworkPolicy and PodDisruptionBudgets on a real API server', () => {
  it('a 2-replica route gets a NetworkPolicy admitting only the sidecar ports and a PodDisruptionBudget, both owned by it', async () => {
    await kubectl(['create', 'priorityclass', 'gateway-high', '--value=1000']);
    await kubectl(['apply', '-f', '-'], route);
    const owner = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'shop'])) as Obj;
    const policy = (await eventually('NetworkPolicy', () =>
      kget(env.cluster, ['-n', NS, 'networkpolicy', 'shop']),
    )) as Obj;
    const pdb = (await eventually('PodDisruptionBudget', () =>
      kget(env.cluster, ['-n', NS, 'poddisruptionbudget', 'shop']),
    )) as Obj;
    const ref = {
      apiVersion: 'portcullis.dev/v1alpha1',
      kind: 'RateLimitRoute',
      name: 'shop',
      uid: owner['metadata']['uid'],
      controller: true,
      blockOwnerDeletion: true,
    };
    expect(policy['metadata']['ownerReferences']).toEqual([ref]);
    expect(pdb['metadata']['ownerReferences']).toEqual([ref]);
    expect(policy['spec']['policyTypes']).toEqual(['Ingress']);
    expect(policy['spec']['ingress']).toEqual([
      {
        ports: [
          { protocol: 'TCP', port: 8080 },
          { protocol: 'TCP', port: 9090 },
        ],
      },
    ]);
    expect(pdb['spec']).toMatchObject({
      maxUnavailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });

    const dep = (await kget(env.cluster, ['-n', NS, 'deployment', 'shop'])) as Obj;
    const pod = dep['spec']['template'];
    expect(pdb['spec']['selector']).toEqual(dep['spec']['selector']);
    expect(pod['metadata']['labels']).toMatchObject(policy['spec']['podSelector']['matchLabels']);
    expect(pod['spec']['priorityClassName']).toBe('gateway-high');
    expect(
      pod['spec']['topologySpreadConstraints'].map(
        (c: Obj) => `${c['topologyKey']}/${c['whenUnsatisfiable']}`,
      ),
    ).toEqual([
      'kubernetes.io/hostname/ScheduleAnyway',
      'topology.kubernetes.io/zone/ScheduleAnyway',
    ]);
    const sidecar = pod['spec']['containers'].find((c: Obj) => c['name'] === 'sidecar');
    expect(sidecar['resources']).toEqual({
      requests: { cpu: '100m', memory: '96Mi' },
      limits: { memory: '384Mi' },
    });
    expect(sidecar['env']).toContainEqual({
      name: 'NODE_OPTIONS',
      value: '--max-semi-space-size=8 --max-old-space-size=192',
    });
    expect(sidecar['startupProbe']).toMatchObject({ httpGet: { path: '/healthz', port: 'admin' } });
  });

  it('the auth server of the namespace (2 replicas with Redis) gets its budget too', async () => {
    await kubectl(['apply', '-f', '-'], oauthClient);
    const pdb = (await eventually('auth-server PodDisruptionBudget', () =>
      kget(env.cluster, ['-n', NS, 'poddisruptionbudget', 'portcullis-auth-server']),
    )) as Obj;
    const dep = (await kget(env.cluster, [
      '-n',
      NS,
      'deployment',
      'portcullis-auth-server',
    ])) as Obj;
    expect(dep['spec']['replicas']).toBe(2);
    expect(pdb['spec']).toMatchObject({ maxUnavailable: 1, selector: dep['spec']['selector'] });
    expect(pdb['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'OAuthClient', name: 'shop-app' }),
    ]);
    expect(dep['spec']['template']['spec']['containers'][0]['startupProbe']).toMatchObject({
      tcpSocket: { port: 'http' },
    });
  });

  it('a no-op resync makes zero write requests (counted in the audit log)', async () => {
    await operatorIdle(operator); // the writes of the steps above have landed
    const since = new Date().toISOString();
    await resyncs(env, operator, 'ratelimitroutes', 3);
    expect(operatorWrites(env, since)).toEqual([]);
  });

  it('scaled to 1 the route loses its budget and keeps its NetworkPolicy; back at 2 the budget returns', async () => {
    await scale(1);
    await eventually(
      'budget deleted',
      async () =>
        (await kget(env.cluster, ['-n', NS, 'poddisruptionbudget', 'shop'])) === undefined,
    );
    expect(await kget(env.cluster, ['-n', NS, 'networkpolicy', 'shop'])).toBeDefined();
    const deletes = operatorWrites(env).filter(
      (e) => e.verb === 'delete' && e.objectRef?.resource === 'poddisruptionbudgets',
    );
    expect(deletes.map((e) => `${e.objectRef?.name}/${e.responseStatus?.code}`)).toEqual([
      'shop/200',
    ]);
    await scale(2);
    await eventually(
      'budget back',
      async () =>
        (await kget(env.cluster, ['-n', NS, 'poddisruptionbudget', 'shop'])) !== undefined,
    );
  });

  it("the chart's operator budget (operator.replicas 2) applies as rendered, and none is rendered for one replica", async () => {
    const template = (args: string[]) =>
      env.cluster.helm([
        'template',
        'portcullis',
        'charts/portcullis',
        '--namespace',
        RELEASE_NS,
        '--kube-version',
        env.cluster.tools.kubernetesVersion,
        '--set',
        'redis.enabled=false',
        ...args,
      ]);
    const two = await template(['--set', 'operator.replicas=2']);
    expect(two.code, two.stderr).toBe(0);
    expect(two.stdout).toContain('kind: PodDisruptionBudget');
    const dry = await env.cluster.kubectl(
      ['apply', '--server-side', '--dry-run=server', '-f', '-'],
      { input: two.stdout },
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'poddisruptionbudget.policy/portcullis-operator serverside-applied (server dry run)',
    );
    const one = await template([]);
    expect(one.stdout).not.toContain('kind: PodDisruptionBudget');
    // The budget's values: another pace, or none at all; a budget that could never allow an eviction is refused.
    const half = await template([
      '--set',
      'operator.replicas=3',
      '--set',
      'operator.podDisruptionBudget.maxUnavailable=50%',
    ]);
    expect(half.stdout).toMatch(/kind: PodDisruptionBudget[\s\S]*maxUnavailable: 50%/);
    const off = await template([
      '--set',
      'operator.replicas=2',
      '--set',
      'operator.podDisruptionBudget.enabled=false',
    ]);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).not.toContain('kind: PodDisruptionBudget');
    const zero = await template([
      '--set',
      'operator.replicas=2',
      '--set',
      'operator.podDisruptionBudget.maxUnavailable=0',
    ]);
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain('maxUnavailable');
  });

  it('everything above ran with the chart RBAC: no request of the operator was forbidden', () => {
    expect(operatorForbidden(env)).toEqual([]);
    expect(operator.program.lines.filter((l) => /forbidden/i.test(l))).toEqual([]);
  });
});

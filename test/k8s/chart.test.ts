// The chart's hygiene: `helm lint` is clean and what `helm template` renders applies to a real API
// server with a server-side dry run (CRDs installed first); the auth servers' bundled Redis never evicts.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { authServerDeployment } from '../../operator/resources/auth/deployment.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { injectedSidecar } from '../../operator/resources/route/injection.ts';
import { defaultResourceSettings } from '../../operator/resources/shared/settings.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { route } from '../unit/operator-fixtures.ts';

let cluster: Cluster;
const NS = 'portcullis-system';

beforeAll(async () => {
  cluster = await startCluster();
  const crds = await cluster.kubectl(['apply', '--server-side', '-f', 'charts/portcullis/crds/']);
  expect(crds.code, crds.stderr).toBe(0);
  await cluster.kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/ratelimitroutes.portcullis.dev',
    'crd/oauthclients.portcullis.dev',
  ]);
  for (const ns of [NS, 'team-a', 'team-b']) await cluster.kubectl(['create', 'namespace', ns]);
});
afterAll(async () => {
  await cluster?.stop();
});

const template = (args: string[] = [], input?: string) =>
  cluster.helm(
    [
      'template',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
      '--kube-version',
      cluster.tools.kubernetesVersion,
      ...args,
    ],
    input === undefined ? {} : { input },
  );

type EnvVar = { name: string; value?: string };
type Container = { image: string; env: EnvVar[]; securityContext?: Record<string, unknown> };
type PodSpec = {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  priorityClassName?: string;
  topologySpreadConstraints?: unknown[];
} & Record<string, unknown>;
type OperatorDeployment = {
  metadata: { labels: Record<string, string> };
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: PodSpec;
    };
  };
};

/** The operator's Deployment in what helm rendered. */
function operatorDeployment(rendered: string): OperatorDeployment {
  const dep = parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
    .find((d) => d?.kind === 'Deployment' && d.metadata?.name?.endsWith('-operator') === true);
  if (dep === undefined || dep === null) throw new Error(`no operator Deployment in:\n${rendered}`);
  return dep as unknown as OperatorDeployment;
}
const operatorPod = (rendered: string) => operatorDeployment(rendered).spec.template;
const envOf = (c: Container): Record<string, string | undefined> =>
  Object.fromEntries(c.env.map((e) => [e.name, e.value]));

function kinds(rendered: string): string[] {
  return parseAllDocuments(rendered)
    .map(
      (d) => d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null,
    )
    .filter((d) => d !== null && d.kind !== undefined)
    .map((d) => `${d!.kind}/${d!.metadata?.namespace ?? ''}/${d!.metadata?.name}`);
}

describe('the Helm chart', () => {
  it('passes helm lint --strict', async () => {
    const res = await cluster.helm([
      'lint',
      '--strict',
      'charts/portcullis',
      '--kube-version',
      cluster.tools.kubernetesVersion,
    ]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toMatch(/0 chart\(s\) failed/);
  });

  it('renders the operator, its ServiceAccount, its RBAC, the admission policies and the bundled Redis', async () => {
    const res = await template();
    expect(res.code, res.stderr).toBe(0);
    expect(kinds(res.stdout).sort()).toEqual(
      [
        `ServiceAccount/${NS}/portcullis`,
        'ClusterRole//portcullis-operator',
        'ClusterRoleBinding//portcullis-operator',
        // Finalizer rights stay cluster-wide, so deleting a namespace never waits on a lost RoleBinding.
        'ClusterRole//portcullis-operator-finalizers',
        'ClusterRoleBinding//portcullis-operator-finalizers',
        // On by default: a route's author needs the rights the route uses; the operator's own limits.
        'ValidatingAdmissionPolicy//portcullis-policy-rights',
        'ValidatingAdmissionPolicy//portcullis-route-rights',
        'ValidatingAdmissionPolicyBinding//portcullis-policy-rights',
        'ValidatingAdmissionPolicyBinding//portcullis-route-rights',
        'ValidatingAdmissionPolicy//portcullis-operator-limits',
        'ValidatingAdmissionPolicyBinding//portcullis-operator-limits',
        'ClusterRole//portcullis-edit',
        'ClusterRole//portcullis-view',
        `Role/${NS}/portcullis-leader-election`,
        `RoleBinding/${NS}/portcullis-leader-election`,
        `Deployment/${NS}/portcullis-operator`,
        `Service/${NS}/portcullis-operator-metrics`,
        `Deployment/${NS}/portcullis-redis`,
        `Service/${NS}/portcullis-redis`,
        `Deployment/${NS}/portcullis-auth-redis`,
        `Service/${NS}/portcullis-auth-redis`,
        `NetworkPolicy/${NS}/portcullis-redis`,
        `Secret/${NS}/portcullis-redis-credentials`,
        `Role/${NS}/portcullis-redis-credentials`,
        `RoleBinding/${NS}/portcullis-redis-credentials`,
        `NetworkPolicy/${NS}/portcullis-auth-redis`,
        `NetworkPolicy/${NS}/portcullis-operator`,
      ].sort(),
    );
    expect(res.stdout).toContain('command: ["node", "dist/operator/main.mjs"]');
    // The bundled Redis reaches the operator as the generated Secret's keys, never as a URL.
    expect(res.stdout).toContain('{ name: PORTCULLIS_DEFAULT_REDIS_URL, value: "" }');
    expect(res.stdout).toContain(
      '{ name: PORTCULLIS_DEFAULT_REDIS_SECRET, value: "portcullis-redis-credentials/redis-url" }',
    );
    expect(res.stdout).toContain(
      '{ name: PORTCULLIS_AUTH_REDIS_SECRET, value: "portcullis-redis-credentials/auth-redis-url" }',
    );
  });

  it("admits to the operator's pods only its metrics and probe port, unless turned off", async () => {
    const res = await template(['--set', 'operator.port=8088']);
    const docs = parseAllDocuments(res.stdout).map(
      (d) =>
        d.toJS() as {
          kind?: string;
          metadata?: { name?: string };
          spec?: Record<string, unknown>;
        } | null,
    );
    const deployment = docs.find(
      (d) => d?.kind === 'Deployment' && d.metadata?.name === 'portcullis-operator',
    ) as { spec: { template: { metadata: { labels: Record<string, string> } } } };
    const policy = docs.find(
      (d) => d?.kind === 'NetworkPolicy' && d.metadata?.name === 'portcullis-operator',
    )?.spec as {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: unknown[];
    };
    expect(deployment.spec.template.metadata.labels).toMatchObject(policy.podSelector.matchLabels);
    expect(policy.policyTypes).toEqual(['Ingress']);
    expect(policy.ingress).toEqual([{ ports: [{ protocol: 'TCP', port: 8088 }] }]);
    const off = await template(['--set', 'operator.networkPolicy.enabled=false']);
    expect(kinds(off.stdout).some((o) => o === `NetworkPolicy/${NS}/portcullis-operator`)).toBe(
      false,
    );
  });

  it('gives the auth servers their own Redis unless told otherwise', async () => {
    const external = await template(['--set', 'redis.url=redis://shared.example:6379']);
    expect(external.code, external.stderr).toBe(0);
    expect(kinds(external.stdout).some((o) => o.includes('redis'))).toBe(false);
    expect(external.stdout).toContain(
      '{ name: PORTCULLIS_AUTH_REDIS_URL, value: "redis://shared.example:6379" }',
    );
    const own = await template(['--set', 'auth.redis.url=redis://auth.example:6379']);
    expect(own.code, own.stderr).toBe(0);
    expect(kinds(own.stdout)).toContain(`Deployment/${NS}/portcullis-redis`);
    expect(kinds(own.stdout)).not.toContain(`Deployment/${NS}/portcullis-auth-redis`);
    expect(own.stdout).toContain(
      '{ name: PORTCULLIS_AUTH_REDIS_URL, value: "redis://auth.example:6379" }',
    );
  });

  it('applies with a server-side dry run, as rendered', async () => {
    const res = await template();
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: res.stdout,
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'deployment.apps/portcullis-operator serverside-applied (server dry run)',
    );
  });

  it('binds the ClusterRole only in the watched namespaces when some are listed, and applies that too', async () => {
    const res = await template([
      '--set',
      'operator.watchNamespaces={team-a,team-b}',
      '--set',
      'redis.enabled=false',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const objects = kinds(res.stdout);
    expect(objects).toContain('RoleBinding/team-a/portcullis-operator');
    expect(objects).toContain('RoleBinding/team-b/portcullis-operator');
    expect(objects).not.toContain('ClusterRoleBinding//portcullis-operator');
    expect(objects.some((o) => o.includes('redis'))).toBe(false);
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: res.stdout,
    });
    expect(dry.code, dry.stderr).toBe(0);
  });

  it('admits to each bundled Redis only the pods the operator renders as its clients, and mounts no API token', async () => {
    const res = await template();
    expect(res.code, res.stderr).toBe(0);
    type Doc = {
      kind?: string;
      metadata?: { name?: string };
      spec?: Record<string, unknown>;
    } | null;
    const docs = parseAllDocuments(res.stdout).map((d) => d.toJS() as Doc);
    const podLabels = (dep: KubeObject) =>
      (dep as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } })
        .spec.template.metadata.labels;
    // The sidecars run in the operator's route pods and, with spec.targetRef, in a team's pods,
    // which keep the team's labels plus those the operator's sidecar field manager applies.
    const targetRef = route('shop', { target: undefined, targetRef: { name: 'web', port: 8081 } });
    const clients = {
      redis: [
        podLabels(routeDeployment(route(), defaultResourceSettings, 'listen: {}')),
        {
          app: 'web',
          ...podLabels(injectedSidecar(targetRef, defaultResourceSettings, 'listen: {}')),
        },
      ],
      'auth-redis': [podLabels(authServerDeployment('team-a', defaultResourceSettings, []))],
    };
    const selectors: Record<string, Record<string, string> | undefined> = {};
    for (const [component, pods] of Object.entries(clients)) {
      const policy = docs.find(
        (d) => d?.kind === 'NetworkPolicy' && d.metadata?.name === `portcullis-${component}`,
      )?.spec as
        | {
            podSelector: { matchLabels: Record<string, string> };
            ingress: {
              from: {
                namespaceSelector: object;
                podSelector: { matchLabels: Record<string, string> };
              }[];
              ports: { port: string }[];
            }[];
          }
        | undefined;
      expect(policy?.podSelector.matchLabels).toEqual({
        'app.kubernetes.io/instance': 'portcullis',
        'app.kubernetes.io/component': component,
      });
      const from = policy?.ingress[0]?.from[0];
      expect(from?.namespaceSelector).toEqual({});
      // Every label the policy asks for is on the client pods the operator renders.
      for (const labels of pods)
        expect(labels).toMatchObject(from?.podSelector.matchLabels ?? { missing: 'selector' });
      selectors[component] = from?.podSelector.matchLabels;
      expect(policy?.ingress[0]?.ports).toEqual([{ port: 'redis', protocol: 'TCP' }]);
      const pod = (
        docs.find((d) => d?.kind === 'Deployment' && d.metadata?.name === `portcullis-${component}`)
          ?.spec as { template: { spec: Record<string, unknown> } }
      ).template.spec;
      expect(pod['automountServiceAccountToken']).toBe(false);
    }
    // The sidecar pods are not auth-redis clients, nor the auth servers redis clients.
    for (const labels of clients.redis)
      expect(labels).not.toMatchObject(selectors['auth-redis'] ?? {});
    for (const labels of clients['auth-redis'])
      expect(labels).not.toMatchObject(selectors['redis'] ?? {});
    const off = await template(['--set', 'redis.networkPolicy.enabled=false']);
    expect(kinds(off.stdout).filter((o) => o.startsWith('NetworkPolicy/'))).toEqual([
      `NetworkPolicy/${NS}/portcullis-operator`,
    ]);
  });

  it("admits Redis clients only from namespaces a tenant cannot forge into: the operator's watchNamespaces by name, or a platform-set selector", async () => {
    type Policy = {
      spec: { ingress: { from: { namespaceSelector: Record<string, unknown> }[] }[] };
    };
    const namespaceSelectors = async (args: string[]) => {
      const res = await template(args);
      expect(res.code, res.stderr).toBe(0);
      const docs = parseAllDocuments(res.stdout).map(
        (d) => d.toJS() as ({ kind?: string; metadata?: { name?: string } } & Policy) | null,
      );
      const applied = await cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], {
        input: res.stdout,
      });
      expect(applied.code, applied.stderr).toBe(0);
      return ['redis', 'auth-redis'].map(
        (c) =>
          docs.find((d) => d?.kind === 'NetworkPolicy' && d.metadata?.name === `portcullis-${c}`)
            ?.spec.ingress[0]?.from[0]?.namespaceSelector,
      );
    };
    const byName = {
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['team-a', 'team-b'] },
      ],
    };
    expect(await namespaceSelectors(['--set', 'operator.watchNamespaces={team-a,team-b}'])).toEqual(
      [byName, byName],
    );
    const platform = { matchLabels: { 'portcullis.dev/gateway': 'allowed' } };
    expect(
      await namespaceSelectors([
        '--set',
        'operator.watchNamespaces={team-a}',
        '--set',
        'redis.networkPolicy.namespaceSelector.matchLabels.portcullis\\.dev/gateway=allowed',
      ]),
    ).toEqual([platform, platform]);
    expect(await namespaceSelectors([])).toEqual([{}, {}]);
  });

  it('runs the auth Redis with noeviction, the limiter Redis with volatile-ttl, maxmemory at 3/4 of the memory limit', async () => {
    const redisArgs = async (args: string[], component: 'redis' | 'auth-redis') => {
      const res = await template(args);
      expect(res.code, res.stderr).toBe(0);
      const redis = parseAllDocuments(res.stdout)
        .map(
          (d) =>
            d.toJS() as {
              kind?: string;
              metadata?: { name?: string };
              spec?: { template: { spec: { containers: { args: string[] }[] } } };
            } | null,
        )
        .find((d) => d?.kind === 'Deployment' && d.metadata?.name === `portcullis-${component}`);
      return redis?.spec?.template.spec.containers[0]?.args ?? [];
    };
    // The integration tier runs redis-server with chartRedisArgs(): it must be what helm renders.
    for (const component of ['redis', 'auth-redis'] as const)
      expect(await redisArgs([], component)).toEqual(chartRedisArgs(component));
    expect(chartRedisArgs('auth-redis')).toEqual(
      expect.arrayContaining([
        '--maxmemory-policy',
        'noeviction',
        '--maxmemory',
        String(96 * 1024 * 1024),
      ]),
    );
    expect(chartRedisArgs('redis')).toEqual(
      expect.arrayContaining(['--maxmemory-policy', 'volatile-ttl']),
    );
    const at = (args: string[]) => args[args.indexOf('--maxmemory') + 1];
    expect(at(await redisArgs(['--set', 'redis.resources.limits.memory=1Gi'], 'auth-redis'))).toBe(
      String(768 * 1024 * 1024),
    );
    expect(
      at(await redisArgs(['--set', 'redis.resources.limits.memory=4000000'], 'auth-redis')),
    ).toBe('3000000');
    const wrong = await template(['--set', 'redis.resources.limits.memory=1G']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('give it in Ki, Mi, Gi or bytes');
  });

  it('refuses values the schema does not know', async () => {
    const res = await template(['--set', 'operator.replicaz=2']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/replicaz/);
  });

  it('installs with helm install (CRDs from crds/ first, then the templates)', async () => {
    const res = await cluster.helm([
      'install',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
    ]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('STATUS: deployed');
    expect(res.stdout).toContain('kubectl explain ratelimitroute.spec.limiter'); // NOTES.txt
    const sa = await cluster.kubectl([
      '-n',
      NS,
      'get',
      'serviceaccount',
      'portcullis',
      '-o',
      'name',
    ]);
    expect(sa.stdout.trim()).toBe('serviceaccount/portcullis');
    const can = await cluster.kubectl([
      'auth',
      'can-i',
      'patch',
      'ratelimitroutes.portcullis.dev',
      '--subresource=status',
      '--as',
      `system:serviceaccount:${NS}:portcullis`,
      '-n',
      'team-a',
    ]);
    expect(can.stdout.trim()).toBe('yes');
    const cannot = await cluster.kubectl([
      'auth',
      'can-i',
      'delete',
      'ratelimitroutes.portcullis.dev',
      '--as',
      `system:serviceaccount:${NS}:portcullis`,
      '-n',
      'team-a',
    ]);
    expect(cannot.stdout.trim()).toBe('no');
  });

  it('keeps the bundled Redis passwords across helm upgrade (lookup), and so the Redis pod templates: their checksum is of the kept password', async () => {
    const state = async () => {
      const secret = JSON.parse(
        (
          await cluster.kubectl([
            '-n',
            NS,
            'get',
            'secret',
            'portcullis-redis-credentials',
            '-o',
            'json',
          ])
        ).stdout,
      ) as { data: Record<string, string> };
      const checksums: Record<string, string | undefined> = {};
      for (const component of ['redis', 'auth-redis']) {
        const dep = JSON.parse(
          (
            await cluster.kubectl([
              '-n',
              NS,
              'get',
              'deployment',
              `portcullis-${component}`,
              '-o',
              'json',
            ])
          ).stdout,
        ) as OperatorDeployment;
        checksums[component] = dep.spec.template.metadata.annotations?.['checksum/redis-password'];
        const password = Buffer.from(secret.data[`${component}-password`] ?? '', 'base64').toString(
          'utf8',
        );
        expect(checksums[component]).toBe(createHash('sha256').update(password).digest('hex'));
      }
      return { data: secret.data, checksums };
    };
    const installed = await state();
    const upgrade = await cluster.helm([
      'upgrade',
      'portcullis',
      'charts/portcullis',
      '--namespace',
      NS,
    ]);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    // Same passwords, same pod templates: an upgrade restarts neither Redis (the auth servers' state lives in one).
    expect(await state()).toEqual(installed);
  });

  it('runs the operator pod under the restricted profile by default, and takes other security contexts', async () => {
    const pod = operatorPod((await template()).stdout);
    expect(pod.spec.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.spec.containers[0]?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.spec.priorityClassName).toBeUndefined();
    expect(pod.spec.topologySpreadConstraints).toBeUndefined();
    const custom = operatorPod(
      (
        await template([
          '--set',
          'operator.podSecurityContext.runAsUser=2000',
          '--set',
          'operator.podSecurityContext.fsGroup=2000',
          '--set',
          'operator.securityContext.readOnlyRootFilesystem=false',
        ])
      ).stdout,
    );
    expect(custom.spec.securityContext).toMatchObject({
      runAsUser: 2000,
      fsGroup: 2000,
      runAsNonRoot: true,
    });
    expect(custom.spec.containers[0]?.securityContext).toMatchObject({
      readOnlyRootFilesystem: false,
      allowPrivilegeEscalation: false,
    });
  });

  it('adds podLabels to the pods but not to the selector, and refuses a selector label', async () => {
    const dep = operatorDeployment(
      (
        await template([
          '--set',
          'operator.podLabels.team=platform',
          '--set',
          'operator.podAnnotations.owner=sre',
        ])
      ).stdout,
    );
    expect(dep.spec.template.metadata.labels).toMatchObject({
      team: 'platform',
      'app.kubernetes.io/component': 'operator',
    });
    expect(dep.spec.template.metadata.annotations).toEqual({ owner: 'sre' });
    expect(dep.spec.selector.matchLabels).not.toHaveProperty('team');
    const clash = await template(['--set', 'operator.podLabels.app\\.kubernetes\\.io/component=x']);
    expect(clash.code).not.toBe(0);
    expect(clash.stderr).toContain(
      "operator.podLabels: app.kubernetes.io/component is one of the Deployment's selector labels",
    );
  });

  it('renders repository@digest for each image with a digest (over any tag), down to the images the operator renders', async () => {
    const digest = (c: string) => `sha256:${c.repeat(64)}`;
    const res = await template([
      '--set',
      'images.tag=9.9.9',
      '--set',
      'images.operator.tag=1.2.3',
      '--set',
      `images.operator.digest=${digest('a')}`,
      '--set',
      `images.sidecar.digest=${digest('b')}`,
    ]);
    expect(res.code, res.stderr).toBe(0);
    const container = operatorPod(res.stdout).spec.containers[0]!;
    expect(container.image).toBe(`portcullis/operator@${digest('a')}`);
    expect(envOf(container)).toMatchObject({
      PORTCULLIS_SIDECAR_IMAGE: `portcullis/sidecar@${digest('b')}`,
      PORTCULLIS_AUTH_SERVER_IMAGE: 'portcullis/auth-server:9.9.9',
    });
    const auth = await template(['--set', `images.authServer.digest=${digest('c')}`]);
    expect(
      envOf(operatorPod(auth.stdout).spec.containers[0]!)['PORTCULLIS_AUTH_SERVER_IMAGE'],
    ).toBe(`portcullis/auth-server@${digest('c')}`);
    const short = await template(['--set', 'images.operator.digest=sha256:abc']);
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain('/images/operator/digest');
  });

  it("appends extraEnv to the operator's environment and refuses the names the chart sets", async () => {
    const res = await template([
      '--set',
      'operator.extraEnv[0].name=HTTPS_PROXY',
      '--set',
      'operator.extraEnv[0].value=http://proxy:3128',
      '--set',
      'operator.extraEnv[1].name=NODE_EXTRA_CA_CERTS',
      '--set',
      'operator.extraEnv[1].value=/ca/ca.crt',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const env = operatorPod(res.stdout).spec.containers[0]!.env;
    expect(env.slice(-2)).toEqual([
      { name: 'HTTPS_PROXY', value: 'http://proxy:3128' },
      { name: 'NODE_EXTRA_CA_CERTS', value: '/ca/ca.crt' },
    ]);
    for (const name of ['PORTCULLIS_SIDECAR_IMAGE', 'NODE_OPTIONS', 'MALLOC_ARENA_MAX']) {
      const clash = await template([
        '--set',
        `operator.extraEnv[0].name=${name}`,
        '--set',
        'operator.extraEnv[0].value=x',
      ]);
      expect(clash.code).not.toBe(0);
      expect(clash.stderr).toContain(`operator.extraEnv: ${name} is set by the chart`);
    }
  });

  it('names every object after fullnameOverride, or after nameOverride in place of the chart name', async () => {
    const full = await template(['--set', 'fullnameOverride=gate']);
    expect(full.code, full.stderr).toBe(0);
    for (const o of kinds(full.stdout)) expect(o.split('/')[2]).toMatch(/^gate(-|$)/);
    expect(envOf(operatorPod(full.stdout).spec.containers[0]!)['PORTCULLIS_LEASE_NAME']).toBe(
      'gate-operator',
    );
    const named = await template(['--set', 'nameOverride=ratelimit']);
    expect(named.code, named.stderr).toBe(0);
    expect(kinds(named.stdout)).toContain(`Deployment/${NS}/portcullis-ratelimit-operator`);
    const dep = operatorDeployment(named.stdout);
    expect(dep.metadata.labels['app.kubernetes.io/name']).toBe('ratelimit');
    expect(dep.spec.selector.matchLabels['app.kubernetes.io/name']).toBe('ratelimit');
  });

  it('schedules the operator pod with nodeSelector, tolerations, affinity, topology spread (its own pods by default) and a priority class', async () => {
    const values = {
      operator: {
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [
          { key: 'dedicated', operator: 'Equal', value: 'platform', effect: 'NoSchedule' },
        ],
        affinity: {
          nodeAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 1,
                preference: {
                  matchExpressions: [{ key: 'pool', operator: 'In', values: ['system'] }],
                },
              },
            ],
          },
        },
        topologySpreadConstraints: [
          {
            maxSkew: 1,
            topologyKey: 'topology.kubernetes.io/zone',
            whenUnsatisfiable: 'ScheduleAnyway',
          },
          {
            maxSkew: 1,
            topologyKey: 'kubernetes.io/hostname',
            whenUnsatisfiable: 'DoNotSchedule',
            labelSelector: { matchLabels: { team: 'platform' } },
          },
        ],
        priorityClassName: 'system-cluster-critical',
      },
    };
    // Named apart from the release the install test puts on the cluster, so the dry run meets no other field manager.
    const res = await template(
      ['--values', '-', '--set', 'fullnameOverride=scheduled'],
      stringify(values),
    );
    expect(res.code, res.stderr).toBe(0);
    const dep = operatorDeployment(res.stdout);
    const pod = dep.spec.template;
    expect(pod.spec).toMatchObject({
      nodeSelector: values.operator.nodeSelector,
      tolerations: values.operator.tolerations,
      affinity: values.operator.affinity,
      priorityClassName: 'system-cluster-critical',
    });
    expect(pod.spec.topologySpreadConstraints).toEqual([
      {
        ...values.operator.topologySpreadConstraints[0],
        labelSelector: { matchLabels: dep.spec.selector.matchLabels },
      },
      values.operator.topologySpreadConstraints[1],
    ]);
    // The top-level priorityClassName stays that of the pods the operator renders.
    expect(envOf(pod.spec.containers[0]!)['PORTCULLIS_PRIORITY_CLASS_NAME']).toBe('');
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: res.stdout,
    });
    expect(dry.code, dry.stderr).toBe(0);
  });

  it('refuses more than one operator replica without leader election, saying why', async () => {
    const res = await template([
      '--set',
      'operator.replicas=2',
      '--set',
      'operator.leaderElection=false',
    ]);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('operator.replicas > 1 needs operator.leaderElection: true');
    for (const ok of [
      ['--set', 'operator.replicas=2'],
      ['--set', 'operator.leaderElection=false'],
    ]) {
      const fine = await template(ok);
      expect(fine.code, fine.stderr).toBe(0);
    }
  });

  it('passes helm lint --strict and a server-side dry run with every new value set', async () => {
    const args = [
      '--set',
      'fullnameOverride=gate',
      '--set',
      'operator.podLabels.team=platform',
      '--set',
      `images.operator.digest=sha256:${'d'.repeat(64)}`,
      '--set',
      'operator.extraEnv[0].name=HTTPS_PROXY',
      '--set',
      'operator.extraEnv[0].value=http://proxy:3128',
      '--set',
      'operator.priorityClassName=system-cluster-critical',
      '--set',
      'operator.replicas=2',
    ];
    const lint = await cluster.helm([
      'lint',
      '--strict',
      'charts/portcullis',
      '--kube-version',
      cluster.tools.kubernetesVersion,
      ...args,
    ]);
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const res = await template(args);
    expect(res.code, res.stderr).toBe(0);
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], {
      input: res.stdout,
    });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'deployment.apps/gate-operator serverside-applied (server dry run)',
    );
  });

  it('includes the generated CRDs with --include-crds', async () => {
    const res = await template(['--include-crds']);
    expect(kinds(res.stdout)).toEqual(
      expect.arrayContaining([
        'CustomResourceDefinition//ratelimitroutes.portcullis.dev',
        'CustomResourceDefinition//oauthclients.portcullis.dev',
      ]),
    );
  });
});

// The chart's hygiene: `helm lint` is clean and what `helm template` renders applies to a real API
// server with a server-side dry run (CRDs installed first); the auth servers' bundled Redis never evicts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startCluster, type Cluster } from '../harness/k8s/cluster.ts';
import { authServerDeployment } from '../../operator/resources/auth-server-deployment.ts';
import { routeDeployment } from '../../operator/resources/route-deployment.ts';
import { defaultResourceSettings } from '../../operator/resources/settings.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { chartRedisArgs } from '../harness/redis.ts';
import { route } from '../unit/operator-fixtures.ts';

let cluster: Cluster;
const NS = 'portcullis-system';

beforeAll(async () => {
  cluster = await startCluster();
  const crds = await cluster.kubectl(['apply', '--server-side', '-f', 'charts/portcullis/crds/']);
  expect(crds.code, crds.stderr).toBe(0);
  await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/ratelimitroutes.portcullis.dev', 'crd/oauthclients.portcullis.dev']);
  for (const ns of [NS, 'team-a', 'team-b']) await cluster.kubectl(['create', 'namespace', ns]);
});
afterAll(async () => {
  await cluster?.stop();
});

const template = (args: string[] = []) =>
  cluster.helm(['template', 'portcullis', 'charts/portcullis', '--namespace', NS, '--kube-version', cluster.tools.kubernetesVersion, ...args]);

function kinds(rendered: string): string[] {
  return parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null)
    .filter((d) => d !== null && d.kind !== undefined)
    .map((d) => `${d!.kind}/${d!.metadata?.namespace ?? ''}/${d!.metadata?.name}`);
}

describe('the Helm chart', () => {
  it('passes helm lint --strict', async () => {
    const res = await cluster.helm(['lint', '--strict', 'charts/portcullis', '--kube-version', cluster.tools.kubernetesVersion]);
    expect(res.code, res.stdout + res.stderr).toBe(0);
    expect(res.stdout).toMatch(/0 chart\(s\) failed/);
  });

  it('renders the operator, its ServiceAccount, least-privilege RBAC and the bundled Redis', async () => {
    const res = await template();
    expect(res.code, res.stderr).toBe(0);
    expect(kinds(res.stdout).sort()).toEqual(
      [
        `ServiceAccount/${NS}/portcullis`,
        'ClusterRole//portcullis-operator',
        'ClusterRoleBinding//portcullis-operator',
        `Role/${NS}/portcullis-leader-election`,
        `RoleBinding/${NS}/portcullis-leader-election`,
        `Deployment/${NS}/portcullis-operator`,
        `Service/${NS}/portcullis-operator-metrics`,
        `Deployment/${NS}/portcullis-redis`,
        `Service/${NS}/portcullis-redis`,
        `Deployment/${NS}/portcullis-auth-redis`,
        `Service/${NS}/portcullis-auth-redis`,
        `NetworkPolicy/${NS}/portcullis-redis`,
        `NetworkPolicy/${NS}/portcullis-auth-redis`,
        `NetworkPolicy/${NS}/portcullis-operator`,
      ].sort(),
    );
    expect(res.stdout).toContain('command: ["node", "operator/main.ts"]');
    expect(res.stdout).toContain(`{ name: PORTCULLIS_DEFAULT_REDIS_URL, value: "redis://portcullis-redis.${NS}.svc:6379" }`);
    expect(res.stdout).toContain(`{ name: PORTCULLIS_AUTH_REDIS_URL, value: "redis://portcullis-auth-redis.${NS}.svc:6379" }`);
  });

  it("admits to the operator's pods only its metrics and probe port, unless turned off", async () => {
    const res = await template(['--set', 'operator.port=8088']);
    const docs = parseAllDocuments(res.stdout).map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null);
    const deployment = docs.find((d) => d?.kind === 'Deployment' && d.metadata?.name === 'portcullis-operator') as { spec: { template: { metadata: { labels: Record<string, string> } } } };
    const policy = docs.find((d) => d?.kind === 'NetworkPolicy' && d.metadata?.name === 'portcullis-operator')?.spec as { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress: unknown[] };
    expect(deployment.spec.template.metadata.labels).toMatchObject(policy.podSelector.matchLabels);
    expect(policy.policyTypes).toEqual(['Ingress']);
    expect(policy.ingress).toEqual([{ ports: [{ protocol: 'TCP', port: 8088 }] }]);
    const off = await template(['--set', 'operator.networkPolicy.enabled=false']);
    expect(kinds(off.stdout).some((o) => o === `NetworkPolicy/${NS}/portcullis-operator`)).toBe(false);
  });

  it("gives the auth servers their own Redis unless told otherwise", async () => {
    const external = await template(['--set', 'redis.url=redis://shared.example:6379']);
    expect(external.code, external.stderr).toBe(0);
    expect(kinds(external.stdout).some((o) => o.includes('redis'))).toBe(false);
    expect(external.stdout).toContain('{ name: PORTCULLIS_AUTH_REDIS_URL, value: "redis://shared.example:6379" }');
    const own = await template(['--set', 'auth.redis.url=redis://auth.example:6379']);
    expect(own.code, own.stderr).toBe(0);
    expect(kinds(own.stdout)).toContain(`Deployment/${NS}/portcullis-redis`);
    expect(kinds(own.stdout)).not.toContain(`Deployment/${NS}/portcullis-auth-redis`);
    expect(own.stdout).toContain('{ name: PORTCULLIS_AUTH_REDIS_URL, value: "redis://auth.example:6379" }');
  });

  it('applies with a server-side dry run, as rendered', async () => {
    const res = await template();
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], { input: res.stdout });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('deployment.apps/portcullis-operator serverside-applied (server dry run)');
  });

  it('binds the ClusterRole only in the watched namespaces when some are listed, and applies that too', async () => {
    const res = await template(['--set', 'operator.watchNamespaces={team-a,team-b}', '--set', 'redis.enabled=false']);
    expect(res.code, res.stderr).toBe(0);
    const objects = kinds(res.stdout);
    expect(objects).toContain('RoleBinding/team-a/portcullis-operator');
    expect(objects).toContain('RoleBinding/team-b/portcullis-operator');
    expect(objects).not.toContain('ClusterRoleBinding//portcullis-operator');
    expect(objects.some((o) => o.includes('redis'))).toBe(false);
    const dry = await cluster.kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], { input: res.stdout });
    expect(dry.code, dry.stderr).toBe(0);
  });

  it("admits to each bundled Redis only the pods the operator renders as its clients, and mounts no API token", async () => {
    const res = await template();
    expect(res.code, res.stderr).toBe(0);
    type Doc = { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null;
    const docs = parseAllDocuments(res.stdout).map((d) => d.toJS() as Doc);
    const podLabels = (dep: KubeObject) => (dep as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels;
    const clients = {
      redis: podLabels(routeDeployment(route(), defaultResourceSettings, 'listen: {}')),
      'auth-redis': podLabels(authServerDeployment('team-a', defaultResourceSettings, [])),
    };
    for (const [component, labels] of Object.entries(clients)) {
      const policy = docs.find((d) => d?.kind === 'NetworkPolicy' && d.metadata?.name === `portcullis-${component}`)?.spec as
        | { podSelector: { matchLabels: Record<string, string> }; ingress: { from: { namespaceSelector: object; podSelector: { matchLabels: Record<string, string> } }[]; ports: { port: string }[] }[] }
        | undefined;
      expect(policy?.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/instance': 'portcullis', 'app.kubernetes.io/component': component });
      const from = policy?.ingress[0]?.from[0];
      expect(from?.namespaceSelector).toEqual({});
      // Every label the policy asks for is on the client pods the operator renders.
      expect(labels).toMatchObject(from?.podSelector.matchLabels ?? { missing: 'selector' });
      expect(policy?.ingress[0]?.ports).toEqual([{ port: 'redis', protocol: 'TCP' }]);
      const pod = (docs.find((d) => d?.kind === 'Deployment' && d.metadata?.name === `portcullis-${component}`)?.spec as { template: { spec: Record<string, unknown> } }).template.spec;
      expect(pod['automountServiceAccountToken']).toBe(false);
    }
    // The route pods are not auth-redis clients, nor the auth servers redis clients.
    expect(clients.redis['app.kubernetes.io/name']).not.toBe(clients['auth-redis']['app.kubernetes.io/name']);
    const off = await template(['--set', 'redis.networkPolicy.enabled=false']);
    expect(kinds(off.stdout).filter((o) => o.startsWith('NetworkPolicy/'))).toEqual([`NetworkPolicy/${NS}/portcullis-operator`]);
  });

  it('runs the auth Redis with noeviction, the limiter Redis with volatile-ttl, maxmemory at 3/4 of the memory limit', async () => {
    const redisArgs = async (args: string[], component: 'redis' | 'auth-redis') => {
      const res = await template(args);
      expect(res.code, res.stderr).toBe(0);
      const redis = parseAllDocuments(res.stdout)
        .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: { template: { spec: { containers: { args: string[] }[] } } } } | null)
        .find((d) => d?.kind === 'Deployment' && d.metadata?.name === `portcullis-${component}`);
      return redis?.spec?.template.spec.containers[0]?.args ?? [];
    };
    // The integration tier runs redis-server with chartRedisArgs(): it must be what helm renders.
    for (const component of ['redis', 'auth-redis'] as const) expect(await redisArgs([], component)).toEqual(chartRedisArgs(component));
    expect(chartRedisArgs('auth-redis')).toEqual(expect.arrayContaining(['--maxmemory-policy', 'noeviction', '--maxmemory', String(96 * 1024 * 1024)]));
    expect(chartRedisArgs('redis')).toEqual(expect.arrayContaining(['--maxmemory-policy', 'volatile-ttl']));
    const at = (args: string[]) => args[args.indexOf('--maxmemory') + 1];
    expect(at(await redisArgs(['--set', 'redis.resources.limits.memory=1Gi'], 'auth-redis'))).toBe(String(768 * 1024 * 1024));
    expect(at(await redisArgs(['--set', 'redis.resources.limits.memory=4000000'], 'auth-redis'))).toBe('3000000');
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
    const res = await cluster.helm(['install', 'portcullis', 'charts/portcullis', '--namespace', NS]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain('STATUS: deployed');
    expect(res.stdout).toContain('kubectl explain ratelimitroute.spec.limiter'); // NOTES.txt
    const sa = await cluster.kubectl(['-n', NS, 'get', 'serviceaccount', 'portcullis', '-o', 'name']);
    expect(sa.stdout.trim()).toBe('serviceaccount/portcullis');
    const can = await cluster.kubectl(['auth', 'can-i', 'patch', 'ratelimitroutes.portcullis.dev', '--subresource=status', '--as', `system:serviceaccount:${NS}:portcullis`, '-n', 'team-a']);
    expect(can.stdout.trim()).toBe('yes');
    const cannot = await cluster.kubectl(['auth', 'can-i', 'delete', 'ratelimitroutes.portcullis.dev', '--as', `system:serviceaccount:${NS}:portcullis`, '-n', 'team-a']);
    expect(cannot.stdout.trim()).toBe('no');
  });

  it('includes the generated CRDs with --include-crds', async () => {
    const res = await template(['--include-crds']);
    expect(kinds(res.stdout)).toEqual(expect.arrayContaining(['CustomResourceDefinition//ratelimitroutes.portcullis.dev', 'CustomResourceDefinition//oauthclients.portcullis.dev']));
  });
});

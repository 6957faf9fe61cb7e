// What keeps a route's pods reachable only through the limiter and available through disruptions:
// the NetworkPolicy, the PodDisruptionBudget, topology spread, priority, startup probes and the
// sidecar's resources with the heap caps that follow them, as rendered from (route, settings).
import { describe, expect, it } from 'vitest';
import {
  authServerDeployment,
  authServerPodDisruptionBudget,
} from '../../operator/resources/auth/deployment.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { routeNetworkPolicy } from '../../operator/resources/route/network-policy.ts';
import { routePodDisruptionBudget } from '../../operator/resources/route/pod-disruption-budget.ts';
import { sidecarOldSpaceMiB } from '../../operator/resources/shared/sidecar-heap.ts';
import { InvalidSpecError } from '../../operator/runtime/errors.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { route, routeObject, settings } from './operator-fixtures.ts';
import { rateLimitRouteSchema } from '../../operator/api/index.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered JSON, read in assertions

const podOf = (dep: KubeObject): Obj => (dep as Obj)['spec']['template'];
const container = (dep: KubeObject, name: string): Obj =>
  podOf(dep)['spec']['containers'].find((c: Obj) => c['name'] === name);
const withTarget = (target: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const base = routeObject();
  return rateLimitRouteSchema.parse({
    ...base,
    spec: {
      ...(base['spec'] as Obj),
      target: { ...(base['spec'] as Obj)['target'], ...target },
      ...extra,
    },
  });
};
const withSpec = (extra: Record<string, unknown>) => withTarget({}, extra);
const render = (r = route(), s = settings) => routeDeployment(r, s, 'listen: {}');

describe('route NetworkPolicy', () => {
  it("selects the route's pods and admits ingress only on the sidecar's proxy and admin ports, not the target's", () => {
    const policy = routeNetworkPolicy(route(), settings) as Obj;
    const dep = render();
    expect(policy['apiVersion']).toBe('networking.k8s.io/v1');
    expect(policy['metadata']).toMatchObject({
      name: 'all',
      namespace: 'team-a',
      ownerReferences: [
        expect.objectContaining({ kind: 'RateLimitRoute', uid: 'uid-all', controller: true }),
      ],
    });
    expect(podOf(dep)['metadata']['labels']).toMatchObject(
      policy['spec']['podSelector']['matchLabels'],
    );
    expect(policy['spec']['policyTypes']).toEqual(['Ingress']);
    expect(policy['spec']['ingress']).toEqual([
      {
        ports: [
          { protocol: 'TCP', port: 8080 },
          { protocol: 'TCP', port: 9090 },
        ],
      },
    ]);
    // The ports it admits are exactly the sidecar's container ports; the target's is not among them.
    const sidecarPortNumbers = container(dep, 'sidecar')['ports'].map(
      (p: Obj) => p['containerPort'],
    );
    expect(policy['spec']['ingress'][0]['ports'].map((p: Obj) => p['port'])).toEqual(
      sidecarPortNumbers,
    );
    expect(sidecarPortNumbers).not.toContain(8081);
  });

  it("follows the sidecar's ports when the target's port collides with the preferred one", () => {
    const policy = routeNetworkPolicy(withTarget({ port: 8080 }), settings) as Obj;
    expect(policy['spec']['ingress'][0]['ports']).toEqual([
      { protocol: 'TCP', port: 8081 },
      { protocol: 'TCP', port: 9090 },
    ]);
  });
});

describe('PodDisruptionBudgets', () => {
  it('a route with two replicas gets maxUnavailable 1 over its pods, unhealthy pods always evictable', () => {
    const pdb = routePodDisruptionBudget(route()) as Obj;
    expect(pdb['apiVersion']).toBe('policy/v1');
    expect(pdb['metadata']).toMatchObject({
      name: 'all',
      namespace: 'team-a',
      ownerReferences: [expect.objectContaining({ kind: 'RateLimitRoute', controller: true })],
    });
    expect(pdb['spec']).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: (render() as Obj)['spec']['selector']['matchLabels'] },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
    expect(pdb['spec']['minAvailable']).toBeUndefined();
  });

  it('none for one replica or none', () => {
    expect(routePodDisruptionBudget(withTarget({ replicas: 1 }))).toBeUndefined();
    expect(routePodDisruptionBudget(withTarget({ replicas: 0 }))).toBeUndefined();
    expect(routePodDisruptionBudget(withTarget({ replicas: 3 }))).toBeDefined();
  });

  it('the auth server gets one while it runs more than one replica (with Redis), over its pods, owned like its Deployment', () => {
    const owner = {
      apiVersion: 'portcullis.dev/v1alpha1',
      kind: 'OAuthClient',
      metadata: { name: 'demo-app', uid: 'u1' },
    };
    const pdb = authServerPodDisruptionBudget('team-a', settings, [owner]) as Obj;
    const dep = authServerDeployment('team-a', settings, [owner]) as Obj;
    expect(pdb['metadata']).toMatchObject({
      name: 'portcullis-auth-server',
      namespace: 'team-a',
      ownerReferences: dep['metadata']['ownerReferences'],
    });
    expect(pdb['spec']).toMatchObject({ maxUnavailable: 1, selector: dep['spec']['selector'] });
    expect(
      authServerPodDisruptionBudget('team-a', { ...settings, authServerReplicas: 1 }, [owner]),
    ).toBeUndefined();
    // Without Redis it runs one replica whatever the setting says: no budget.
    expect(
      authServerPodDisruptionBudget('team-a', { ...settings, authRedisUrl: undefined }, [owner]),
    ).toBeUndefined();
  });
});

describe('scheduling of route and auth-server pods', () => {
  it('spread over hosts and zones, as a preference, counting only pods of the same template', () => {
    for (const dep of [render(), authServerDeployment('team-a', settings, [])]) {
      const pod = podOf(dep);
      const constraints = pod['spec']['topologySpreadConstraints'] as Obj[];
      expect(constraints.map((c) => c['topologyKey'])).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const c of constraints) {
        expect(c).toMatchObject({
          maxSkew: 1,
          whenUnsatisfiable: 'ScheduleAnyway',
          matchLabelKeys: ['pod-template-hash'],
        });
        expect(c['labelSelector']['matchLabels']).toEqual(
          (dep as Obj)['spec']['selector']['matchLabels'],
        );
        expect(pod['metadata']['labels']).toMatchObject(c['labelSelector']['matchLabels']);
      }
    }
  });

  it("priorityClassName: none by default, the operator's setting, a route's own wins for its pods", () => {
    expect(podOf(render())['spec']).not.toHaveProperty('priorityClassName');
    expect(podOf(authServerDeployment('team-a', settings, []))['spec']).not.toHaveProperty(
      'priorityClassName',
    );
    const s = { ...settings, priorityClassName: 'gateway-high' };
    expect(podOf(render(route(), s))['spec']['priorityClassName']).toBe('gateway-high');
    expect(podOf(authServerDeployment('team-a', s, []))['spec']['priorityClassName']).toBe(
      'gateway-high',
    );
    expect(
      podOf(render(withSpec({ priorityClassName: 'critical-api' }), s))['spec'][
        'priorityClassName'
      ],
    ).toBe('critical-api');
    expect(
      podOf(render(withSpec({ priorityClassName: 'critical-api' })))['spec']['priorityClassName'],
    ).toBe('critical-api');
  });

  it('the sidecar and the auth server get startup probes; the target keeps its preStop pause', () => {
    const dep = render();
    expect(container(dep, 'sidecar')['startupProbe']).toMatchObject({
      httpGet: { path: '/healthz', port: 'admin' },
      periodSeconds: 2,
      failureThreshold: 30,
    });
    expect(
      container(authServerDeployment('team-a', settings, []), 'auth-server')['startupProbe'],
    ).toMatchObject({ tcpSocket: { port: 'http' }, failureThreshold: 30 });
    expect(container(dep, 'target')['lifecycle']).toEqual({ preStop: { sleep: { seconds: 15 } } });
    expect(container(dep, 'sidecar')['lifecycle']).toEqual({ preStop: { sleep: { seconds: 5 } } });
  });
});

describe('container resources', () => {
  const nodeOptions = (dep: KubeObject) =>
    container(dep, 'sidecar')['env'].find((e: Obj) => e['name'] === 'NODE_OPTIONS')['value'];

  it("the sidecar's defaults: 50m/64Mi requested, 256Mi limit, old space 128 MiB (ADR 0008)", () => {
    const dep = render();
    expect(container(dep, 'sidecar')['resources']).toEqual({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { memory: '256Mi' },
    });
    expect(nodeOptions(dep)).toBe('--max-semi-space-size=8 --max-old-space-size=128');
  });

  it("the operator's setting replaces the default, and the heap caps follow its memory limit", () => {
    const s = {
      ...settings,
      sidecarResources: {
        requests: { cpu: '100m', memory: '128Mi' },
        limits: { memory: '512Mi', cpu: '1' },
      },
    };
    const dep = render(route(), s);
    expect(container(dep, 'sidecar')['resources']).toEqual(s.sidecarResources);
    expect(nodeOptions(dep)).toBe('--max-semi-space-size=8 --max-old-space-size=256');
  });

  it('spec.sidecar.resources replaces requests and/or limits per list; numbers become strings', () => {
    const limitsOnly = render(
      withSpec({ sidecar: { resources: { limits: { memory: '1Gi', cpu: 2 } } } }),
    );
    expect(container(limitsOnly, 'sidecar')['resources']).toEqual({
      requests: { cpu: '50m', memory: '64Mi' },
      limits: { memory: '1Gi', cpu: '2' },
    });
    expect(nodeOptions(limitsOnly)).toBe('--max-semi-space-size=8 --max-old-space-size=512');
    const requestsOnly = render(
      withSpec({ sidecar: { resources: { requests: { cpu: '250m' } } } }),
    );
    expect(container(requestsOnly, 'sidecar')['resources']).toEqual({
      requests: { cpu: '250m' },
      limits: { memory: '256Mi' },
    });
    expect(nodeOptions(requestsOnly)).toBe('--max-semi-space-size=8 --max-old-space-size=128');
  });

  it('without a memory limit the old space stays at the default cap; a byte count is read too', () => {
    expect(sidecarOldSpaceMiB({ requests: { memory: '64Mi' } })).toBe(128);
    expect(sidecarOldSpaceMiB({ limits: { memory: String(300 * 1024 * 1024) } })).toBe(150);
    expect(sidecarOldSpaceMiB({ limits: { memory: '96Mi' } })).toBe(48);
  });

  it('a request above its limit, or a memory limit too small for the sidecar, is an invalid spec naming the field', () => {
    const above = withSpec({ sidecar: { resources: { requests: { memory: '512Mi' } } } });
    expect(() => render(above)).toThrow(InvalidSpecError);
    expect(() => render(above)).toThrow(
      /spec\.sidecar\.resources: requests\.memory \(512Mi\) is above limits\.memory \(256Mi\)/,
    );
    const tiny = withSpec({ sidecar: { resources: { limits: { memory: '64Mi' } } } });
    expect(() => render(tiny)).toThrow(/below 96Mi/);
    expect(() =>
      render(withSpec({ sidecar: { resources: { limits: { memory: '1e9' } } } })),
    ).toThrow(/not a quantity/);
  });

  it("the auth server's resources come from the settings", () => {
    expect(
      container(authServerDeployment('team-a', settings, []), 'auth-server')['resources'],
    ).toEqual({ requests: { cpu: '50m', memory: '96Mi' }, limits: { memory: '384Mi' } });
    const s = {
      ...settings,
      authServerResources: {
        requests: { cpu: '200m', memory: '256Mi' },
        limits: { memory: '1Gi' },
      },
    };
    expect(container(authServerDeployment('team-a', s, []), 'auth-server')['resources']).toEqual(
      s.authServerResources,
    );
  });
});

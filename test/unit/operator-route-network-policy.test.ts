// The limiter cannot be walked around: every kind of route gets NetworkPolicies by default.
// targetRef: the team's pods running the sidecar admit only the sidecar ports (not the app port).
// upstream: the pods behind the upstream Service admit only the route's gateway pods.
// spec.networkPolicy.enabled=false opts one route out (the policies it had are deleted); an
// ExternalName upstream and the route's own Service as upstream are refused.
import { describe, expect, it } from 'vitest';
import {
  rateLimitRouteCrd,
  rateLimitRouteSchema,
  UPSTREAM_SELF_RULE,
} from '../../operator/api/index.ts';
import { UPSTREAM_POLL_MS } from '../../operator/controllers/upstream-service.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { routeReconciler, settings } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- objects of the memory API, read in assertions

function routeOf(spec: Record<string, unknown>, name = 'all'): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1 },
    spec: { limiter: { replenishRate: 1, burstCapacity: 10 }, ...spec },
  };
}
const TARGET_REF = { targetRef: { name: 'web', port: 8080 } };
const UPSTREAM = { upstream: { service: { name: 'user-service', port: 8081 } } };

function teamDeployment(): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team-a' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'app', image: 'example/web:1.0' }] },
      },
    },
  };
}
function teamService(
  spec: Record<string, unknown> = { selector: { app: 'user-service' }, ports: [{ port: 8081 }] },
): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'user-service', namespace: 'team-a' },
    spec,
  };
}
const policy = (client: MemoryKubeClient, name: string) =>
  client.peek(resourceTypes.networkPolicy, 'team-a', name) as Obj | undefined;
const ready = (client: MemoryKubeClient) =>
  (
    (client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as Obj)['status'][
      'conditions'
    ] as Obj[]
  )[0];

describe('NetworkPolicies of a targetRef route', () => {
  it("the team's pods that run the sidecar admit ingress only on the sidecar's two ports (the app's 8080 moves the proxy to 8081)", async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamDeployment());
    client.put(routeOf(TARGET_REF));
    await reconcile();
    const np = policy(client, 'all');
    expect(np?.['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', name: 'all', controller: true }),
    ]);
    // The labels injection puts on the pod template: pods still without the sidecar are not selected.
    expect(np?.['spec']['podSelector']).toEqual({
      matchLabels: { 'portcullis.dev/sidecar': 'true', 'portcullis.dev/route': 'all' },
    });
    const labels = (client.peek(resourceTypes.deployment, 'team-a', 'web') as Obj)['spec'][
      'template'
    ]['metadata']['labels'];
    expect(labels).toMatchObject(np?.['spec']['podSelector']['matchLabels']);
    expect(np?.['spec']['policyTypes']).toEqual(['Ingress']);
    expect(np?.['spec']['ingress']).toEqual([
      {
        ports: [
          { protocol: 'TCP', port: 8081 },
          { protocol: 'TCP', port: settings.sidecarAdminPort },
        ],
      },
    ]);
    expect(JSON.stringify(np?.['spec']['ingress'])).not.toContain('"port":8080');
  });
});

describe('NetworkPolicies of an upstream route', () => {
  it("the upstream Service's pods admit ingress only from the route's gateway pods; the gateway pods admit only the sidecar ports", async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamService());
    client.put(routeOf(UPSTREAM));
    expect(await reconcile()).toEqual({});
    const up = policy(client, 'all.upstream');
    expect(up?.['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', name: 'all', controller: true }),
    ]);
    expect(up?.['metadata']['labels']).toMatchObject({
      'app.kubernetes.io/managed-by': 'portcullis-operator',
      'portcullis.dev/route': 'all',
    });
    expect(up?.['spec']).toEqual({
      podSelector: { matchLabels: { app: 'user-service' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          from: [
            {
              podSelector: {
                matchLabels: {
                  'app.kubernetes.io/name': 'portcullis-gateway',
                  'app.kubernetes.io/instance': 'all',
                },
              },
            },
          ],
        },
      ],
    });
    const gateway = (client.peek(resourceTypes.deployment, 'team-a', 'all') as Obj)['spec'][
      'template'
    ]['metadata']['labels'];
    expect(gateway).toMatchObject(
      up?.['spec']['ingress'][0]['from'][0]['podSelector']['matchLabels'],
    );
    expect(policy(client, 'all')?.['spec']['podSelector']).toEqual({
      matchLabels: {
        'app.kubernetes.io/name': 'portcullis-gateway',
        'app.kubernetes.io/instance': 'all',
      },
    });
  });

  it('follows a new selector of the Service; a missing Service keeps the policy, warns and looks again', async () => {
    const { client, reconcile, events } = await routeReconciler();
    client.put(teamService());
    client.put(routeOf(UPSTREAM));
    await reconcile();
    client.put(
      teamService({ selector: { app: 'user-service', track: 'v2' }, ports: [{ port: 8081 }] }),
    );
    await reconcile();
    expect(policy(client, 'all.upstream')?.['spec']['podSelector']).toEqual({
      matchLabels: { app: 'user-service', track: 'v2' },
    });

    await client.delete(resourceTypes.service, 'team-a', 'user-service');
    expect(await reconcile()).toEqual({ requeueAfterMs: UPSTREAM_POLL_MS });
    expect(policy(client, 'all.upstream')).toBeDefined();
    expect(events.list).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'UpstreamUnprotected',
        message: expect.stringContaining('does not exist'),
      }),
    );
  });

  it('a Service without a selector (endpoints kept by hand) cannot be covered: no policy, a Warning saying so', async () => {
    const { client, reconcile, events } = await routeReconciler();
    client.put(teamService({ ports: [{ port: 8081 }] }));
    client.put(routeOf(UPSTREAM));
    expect(await reconcile()).toEqual({ requeueAfterMs: UPSTREAM_POLL_MS });
    expect(policy(client, 'all.upstream')).toBeUndefined();
    expect(events.list).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'UpstreamUnprotected',
        message: expect.stringContaining('no selector'),
      }),
    );
  });

  it('an ExternalName Service is refused: Ready False UpstreamInvalid, nothing written', async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamService({ type: 'ExternalName', externalName: 'metadata.internal.example' }));
    client.put(routeOf(UPSTREAM));
    await reconcile();
    expect(ready(client)).toMatchObject({
      status: 'False',
      reason: 'UpstreamInvalid',
      message: expect.stringContaining('ExternalName'),
    });
    expect(
      client.writes().filter((w) => w.subresource === undefined && w.kind !== 'Event'),
    ).toEqual([]);
  });

  it("the route's own Service as upstream is refused by the schema and by a CEL rule with the same message", () => {
    const parsed = rateLimitRouteSchema.safeParse(
      routeOf({ upstream: { service: { name: 'all', port: 80 } } }),
    );
    expect(parsed.error?.issues.map((i) => i.message)).toContain(UPSTREAM_SELF_RULE);
    expect(rateLimitRouteSchema.safeParse(routeOf(UPSTREAM)).success).toBe(true);
    const root = (buildCrd(rateLimitRouteCrd) as Obj)['spec']['versions'][0]['schema'][
      'openAPIV3Schema'
    ];
    expect(root['x-kubernetes-validations']).toContainEqual({
      rule: '!has(self.spec.upstream) || self.spec.upstream.service.name != self.metadata.name',
      message: UPSTREAM_SELF_RULE,
    });
  });
});

describe('spec.networkPolicy.enabled=false', () => {
  it.each([
    ['targetRef', TARGET_REF, ['all']],
    ['upstream', UPSTREAM, ['all', 'all.upstream']],
    ['target', { target: { image: 'example/web:1.0', port: 8080, replicas: 1 } }, ['all']],
  ])(
    'opts a %s route out: the policies it had are deleted, and come back when it opts in again',
    async (_kind, spec, names) => {
      const { client, reconcile } = await routeReconciler();
      client.put(teamDeployment());
      client.put(teamService());
      client.put(routeOf(spec));
      await reconcile();
      for (const name of names) expect(policy(client, name), name).toBeDefined();

      client.put(routeOf({ ...spec, networkPolicy: { enabled: false } }));
      await reconcile();
      for (const name of names) expect(policy(client, name), name).toBeUndefined();

      client.put(routeOf({ ...spec, networkPolicy: { enabled: true } }));
      await reconcile();
      for (const name of names) expect(policy(client, name), name).toBeDefined();
    },
  );

  it('defaults to on, in the schema and in the CRD', () => {
    expect(
      rateLimitRouteSchema.parse(routeOf({ ...UPSTREAM, networkPolicy: {} })).spec.networkPolicy,
    ).toEqual({ enabled: true });
    const spec = (buildCrd(rateLimitRouteCrd) as Obj)['spec']['versions'][0]['schema'][
      'openAPIV3Schema'
    ]['properties']['spec'];
    expect(spec['properties']['networkPolicy']['properties']['enabled']).toMatchObject({
      type: 'boolean',
      default: true,
    });
  });
});

// spec.targetRef: the sidecar added to a Deployment a team already runs, under the operator's own
// field manager (only the container, its volumes, the config hash, the sidecar-pod and route
// labels), the route's Service pointed at it, and exactly that removed when the route is deleted
// (a finalizer holds the deletion). status.selector is the team Deployment's, whose pods it counts.
import { describe, expect, it } from 'vitest';
import {
  rateLimitRouteCrd,
  rateLimitRouteSchema,
  TARGET_REF_IMMUTABLE_RULE,
  WORKLOAD_RULE,
} from '../../operator/api/index.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import {
  INJECTION_FINALIZER,
  injectedSidecar,
  SIDECAR_FIELD_MANAGER,
} from '../../operator/resources/route/injection.ts';
import { TARGET_RECHECK_MS } from '../../operator/controllers/sidecar-injection.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { settings, routeReconciler } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- objects of the memory API, read in assertions

/** The team's Deployment as its chart installs it. */
function teamDeployment(port = 8081): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team-a', labels: { app: 'web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            {
              name: 'app',
              image: 'example/web:1.0',
              ports: [{ name: 'http', containerPort: port }],
            },
          ],
          volumes: [{ name: 'data', emptyDir: {} }],
        },
      },
    },
  };
}

function refRoute(
  extra: Record<string, unknown> = {},
  limiter: Record<string, unknown> = { replenishRate: 1, burstCapacity: 10 },
): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name: 'all', namespace: 'team-a', uid: 'uid-all', generation: 1, ...extra },
    spec: { targetRef: { name: 'web', port: 8081 }, limiter },
  };
}

const setup = () => routeReconciler();

const team = (client: MemoryKubeClient) =>
  client.peek(resourceTypes.deployment, 'team-a', 'web') as Obj;
const route = (client: MemoryKubeClient) =>
  client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as Obj;
const ready = (client: MemoryKubeClient) =>
  (route(client)['status']['conditions'] as Obj[]).find((c) => c['type'] === 'Ready');

describe('spec.targetRef: the API', () => {
  it('takes exactly one of target, upstream and targetRef; targetRef is fixed for the life of the route (CEL transition rule)', () => {
    expect(rateLimitRouteSchema.safeParse(refRoute()).success).toBe(true);
    const both = refRoute();
    (both['spec'] as Obj)['upstream'] = { service: { name: 'web', port: 8081 } };
    expect(rateLimitRouteSchema.safeParse(both).error?.issues.map((i) => i.message)).toContain(
      WORKLOAD_RULE,
    );
    const spec = (buildCrd(rateLimitRouteCrd) as Obj)['spec']['versions'][0]['schema'][
      'openAPIV3Schema'
    ]['properties']['spec'];
    expect(spec['x-kubernetes-validations'].map((v: Obj) => v['message'])).toEqual([
      WORKLOAD_RULE,
      TARGET_REF_IMMUTABLE_RULE,
    ]);
    expect(spec['x-kubernetes-validations'][1]['rule']).toContain('oldSelf.targetRef');
  });
});

describe('spec.targetRef: into an existing Deployment', () => {
  it('adds only the sidecar container, its volumes and the config hash, under its own field manager; the team fields stay', async () => {
    const { client, reconcile } = await setup();
    client.put(teamDeployment());
    client.put(refRoute());
    expect(await reconcile()).toEqual({ requeueAfterMs: TARGET_RECHECK_MS }); // not ready yet: its rollout wakes the route, the recheck is a safety net

    expect(route(client)['metadata']['finalizers']).toEqual([INJECTION_FINALIZER]);
    expect(client.writes('Deployment')).toEqual([
      expect.objectContaining({ verb: 'apply', name: 'web', fieldManager: SIDECAR_FIELD_MANAGER }),
    ]);
    const dep = team(client);
    expect(dep['spec']['replicas']).toBe(2);
    expect(dep['spec']['selector']).toEqual({ matchLabels: { app: 'web' } });
    const pod = dep['spec']['template']['spec'];
    expect(pod['containers'].map((c: Obj) => c['name'])).toEqual(['app', 'portcullis-sidecar']);
    expect(pod['containers'][0]).toEqual(
      (teamDeployment() as Obj)['spec']['template']['spec']['containers'][0],
    );
    expect(pod['volumes'].map((v: Obj) => v['name'])).toEqual([
      'data',
      'portcullis-sidecar-config',
      'portcullis-sidecar-tmp',
    ]);
    const sidecar = pod['containers'][1];
    expect(sidecar['ports'].map((p: Obj) => p['name'])).toEqual(['rlr-http', 'rlr-admin']);
    expect(sidecar['readinessProbe']['httpGet']['port']).toBe('rlr-admin');
    expect(sidecar['volumeMounts'].map((m: Obj) => m['name'])).toContain(
      'portcullis-sidecar-config',
    );
    expect(
      dep['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'],
    ).toMatch(/^[0-9a-f]{16}$/);
    // The pods get the label every sidecar pod carries (the bundled Redis admits, the PodMonitor scrapes by it) and the route's.
    expect(dep['spec']['template']['metadata']['labels']).toEqual({
      app: 'web',
      'portcullis.dev/sidecar': 'true',
      'portcullis.dev/route': 'all',
    });
    expect(dep['metadata']['labels']).toEqual({ app: 'web' });
    expect(dep['metadata']['ownerReferences']).toBeUndefined(); // never adopted

    const cm = client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar') as Obj;
    expect(parseSidecarConfigText(cm['data']['config.yaml']).upstream?.url).toBe(
      'http://127.0.0.1:8081',
    );
    const svc = client.peek(resourceTypes.service, 'team-a', 'all') as Obj;
    expect(svc['spec']['selector']).toEqual({ app: 'web' });
    expect(svc['spec']['ports'].map((p: Obj) => p['targetPort'])).toEqual([
      'rlr-http',
      'rlr-admin',
    ]);
    // No Deployment or budget of the route's own (its NetworkPolicy: operator-route-network-policy.test.ts).
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeUndefined();
    expect(client.peek(resourceTypes.podDisruptionBudget, 'team-a', 'all')).toBeUndefined();
  });

  it("the Redis URL Secret is readable by the sidecar whatever the team pod's fsGroup: mode 0444 in the team pod (only the sidecar mounts it), 0440 with the route's own fsGroup", () => {
    const secretRef = { secretRef: { name: 'redis-credentials', key: 'redis-url' } };
    const injecting = rateLimitRouteSchema.parse({
      ...refRoute(),
      spec: { ...(refRoute()['spec'] as Obj), redis: secretRef },
    });
    const injected = injectedSidecar(
      injecting,
      settings,
      renderSidecarConfig(injecting, settings),
    ) as Obj;
    const volume = (injected['spec']['template']['spec']['volumes'] as Obj[]).find(
      (v) => v['name'] === 'portcullis-redis-url',
    );
    expect(volume?.['secret']).toMatchObject({
      secretName: 'redis-credentials',
      defaultMode: 0o444,
    });
    const mounts = (injected['spec']['template']['spec']['containers'] as Obj[])[0]?.[
      'volumeMounts'
    ] as Obj[];
    expect(mounts.find((m) => m['name'] === 'portcullis-redis-url')).toMatchObject({
      readOnly: true,
    });

    const own = rateLimitRouteSchema.parse({
      apiVersion: 'portcullis.dev/v1alpha1',
      kind: 'RateLimitRoute',
      metadata: { name: 'own', namespace: 'team-a' },
      spec: {
        target: { image: 'example/web:1.0', port: 8081 },
        limiter: { replenishRate: 1, burstCapacity: 10 },
        redis: secretRef,
      },
    });
    const pod = (routeDeployment(own, settings, renderSidecarConfig(own, settings)) as Obj)['spec'][
      'template'
    ]['spec'];
    expect(pod['securityContext']['fsGroup']).toBe(1000);
    expect(
      (pod['volumes'] as Obj[]).find((v) => v['name'] === 'redis-url')?.['secret']['defaultMode'],
    ).toBe(0o440);
  });

  it('Ready waits for the rollout to end: pods of the previous template (ready ones too) still running keep it Progressing', async () => {
    const { client, reconcile } = await setup();
    client.put(teamDeployment());
    client.put(refRoute());
    await reconcile();
    const dep = team(client);
    const status = {
      observedGeneration: dep['metadata']['generation'],
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    };
    // The new pods are not ready; the old ones are and still count as ready replicas.
    client.put({ ...(dep as KubeObject), status: { ...status, replicas: 4 } });
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(ready(client)?.['message']).toMatch(/2 pods of the previous template still running/);
    client.put({ ...(team(client) as KubeObject), status: { ...status, replicas: 2 } });
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'True', reason: 'Ready' });
  });

  it('a reconcile with nothing to change writes nothing; Ready follows the team Deployment', async () => {
    const { client, reconcile } = await setup();
    client.put(teamDeployment());
    client.put(refRoute());
    await reconcile();
    const dep = team(client);
    client.put({
      ...(dep as KubeObject),
      status: {
        observedGeneration: dep['metadata']['generation'],
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      },
    });
    expect(await reconcile()).toEqual({});
    expect(ready(client)).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(route(client)['status']).toMatchObject({ replicas: 2, readyReplicas: 2 });
    const writes = client.writes().length;
    await reconcile();
    expect(client.writes().length).toBe(writes);
  });

  it("status.selector (the scale subresource's labelSelectorPath) is the team Deployment's, whose pods status.replicas counts", async () => {
    const { client, reconcile } = await setup();
    const dep = teamDeployment() as Obj;
    dep['spec']['selector'] = { matchLabels: { app: 'web', tier: 'front' } };
    dep['spec']['template']['metadata']['labels'] = { app: 'web', tier: 'front', version: '1' };
    client.put(dep as KubeObject);
    client.put(refRoute());
    await reconcile();
    expect(route(client)['status']['selector']).toBe('app=web,tier=front');
    // Not the gateway labels, which the team's pods do not carry.
    expect(route(client)['status']['selector']).not.toContain('portcullis-gateway');
  });

  it('no status.selector while the team Deployment is missing (the pods are unknown)', async () => {
    const { client, reconcile } = await setup();
    client.put(refRoute());
    await reconcile();
    expect(ready(client)).toMatchObject({ reason: 'TargetRefInvalid' });
    expect(route(client)['status']['selector']).toBeUndefined();
    expect(route(client)['status']['service']).toBe('all');
  });

  it('a spec change rolls the team pods through the config hash the operator owns', async () => {
    const { client, reconcile } = await setup();
    client.put(teamDeployment());
    client.put(refRoute());
    await reconcile();
    const hash =
      team(client)['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'];
    client.put(
      refRoute({ finalizers: [INJECTION_FINALIZER] }, { replenishRate: 9, burstCapacity: 10 }),
    );
    await reconcile();
    expect(
      team(client)['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'],
    ).not.toBe(hash);
    expect(
      team(client)['spec']['template']['spec']['containers'].map((c: Obj) => c['name']),
    ).toEqual(['app', 'portcullis-sidecar']);
  });

  it('deleting the route removes exactly what was added, then the finalizer', async () => {
    const { client, events, reconcile } = await setup();
    client.put(teamDeployment());
    client.put(refRoute());
    await reconcile();
    const live = route(client) as KubeObject;
    client.put({
      ...live,
      metadata: { ...live.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    });
    await reconcile();
    const dep = team(client);
    expect(dep['spec']).toEqual(teamDeployment()['spec']);
    expect(dep['metadata']['labels']).toEqual({ app: 'web' });
    expect(route(client)['metadata']['finalizers']).toEqual([]);
    expect(events.list).toContainEqual(
      expect.objectContaining({
        reason: 'SidecarRemoved',
        message: 'removed the sidecar from Deployment web',
      }),
    );
  });

  it('a missing Deployment: TargetRefInvalid naming it, nothing else written, looked at again only as a safety net', async () => {
    const { client, reconcile } = await setup();
    client.put(refRoute());
    expect(await reconcile()).toEqual({ requeueAfterMs: TARGET_RECHECK_MS });
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'TargetRefInvalid' });
    expect(ready(client)?.['message']).toMatch(/Deployment web \(spec.targetRef\) does not exist/);
    expect(client.writes().filter((w) => w.kind !== 'RateLimitRoute')).toEqual([]);
  });

  it('a team container on the sidecar port: TargetRefInvalid naming container and port; the Deployment is not written', async () => {
    const { client, reconcile } = await setup();
    const dep = teamDeployment();
    ((dep as Obj)['spec']['template']['spec']['containers'][0]['ports'] as Obj[]).push({
      name: 'metrics',
      containerPort: settings.sidecarAdminPort,
    });
    client.put(dep);
    client.put(refRoute());
    await reconcile();
    expect(ready(client)?.['message']).toMatch(
      new RegExp(`container app of Deployment web declares port ${settings.sidecarAdminPort}`),
    );
    expect(client.writes('Deployment')).toEqual([]);
  });
});

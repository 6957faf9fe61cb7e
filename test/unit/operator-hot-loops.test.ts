// Objects two controllers would fight over, forever: a route named like the auth server's objects
// (pruned by one, recreated by the other), and two targetRef routes on one Deployment (each
// rewrites the sidecar, rolling the pods on every reconcile). Each is refused once, in status.
import { describe, expect, it } from 'vitest';
import { RESERVED_ROUTE_NAME_RULE, rateLimitRouteCrd } from '../../operator/api/index.ts';
import { AuthServerReconciler } from '../../operator/controllers/auth-server-reconciler.ts';
import { AUTH_SERVER_NAME } from '../../operator/resources/auth/names.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { Applier } from '../../operator/runtime/applier.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { flush } from '../harness/manual-clock.ts';
import {
  clientObject,
  recordingEvents,
  route,
  routeObject,
  routeReconciler,
  settings,
  silent,
} from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- objects of the memory API, read in assertions

function teamDeployment(extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'team-a', ...extra },
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

function refRoute(name: string): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name, namespace: 'team-a', uid: `uid-${name}`, generation: 1 },
    spec: {
      targetRef: { name: 'web', port: 8081 },
      limiter: { replenishRate: 1, burstCapacity: 10 },
    },
  };
}

const readyOf = (client: MemoryKubeClient, name: string) =>
  (
    (client.peek(resourceTypes.rateLimitRoute, 'team-a', name) as Obj)['status'][
      'conditions'
    ] as Obj[]
  ).find((c) => c['type'] === 'Ready');
const podLabels = (client: MemoryKubeClient) =>
  (client.peek(resourceTypes.deployment, 'team-a', 'web') as Obj)['spec']['template']['metadata'][
    'labels'
  ];

describe('two targetRef routes on one Deployment', () => {
  it('the second is TargetRefInUse and writes nothing to the Deployment, however often both reconcile', async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamDeployment());
    client.put(refRoute('first'));
    await reconcile('team-a/first');
    client.put(refRoute('second'));
    await reconcile('team-a/second');
    expect(readyOf(client, 'second')).toMatchObject({ status: 'False', reason: 'TargetRefInUse' });
    expect(readyOf(client, 'second')?.['message']).toMatch(
      /already runs the sidecar of RateLimitRoute first/,
    );
    const writes = client.writes('Deployment').length;
    for (let i = 0; i < 3; i++) {
      await reconcile('team-a/first');
      await reconcile('team-a/second');
    }
    expect(client.writes('Deployment').length).toBe(writes);
    expect(podLabels(client)['portcullis.dev/route']).toBe('first');
  });

  it("deleting the second route leaves the first route's sidecar in place", async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamDeployment());
    client.put(refRoute('first'));
    await reconcile('team-a/first');
    client.put(refRoute('second'));
    await reconcile('team-a/second');
    const second = client.peek(resourceTypes.rateLimitRoute, 'team-a', 'second') as KubeObject;
    client.put({
      ...second,
      metadata: { ...second.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    });
    await reconcile('team-a/second');
    const containers = (client.peek(resourceTypes.deployment, 'team-a', 'web') as Obj)['spec'][
      'template'
    ]['spec']['containers'] as Obj[];
    expect(containers.map((c) => c['name'])).toEqual(['app', 'portcullis-sidecar']);
    expect(podLabels(client)['portcullis.dev/route']).toBe('first');
  });

  it('a label left by a route that no longer exists holds nothing: the route takes the Deployment', async () => {
    const { client, reconcile } = await routeReconciler();
    const dep = teamDeployment() as Obj;
    dep['spec']['template']['metadata']['labels']['portcullis.dev/route'] = 'gone';
    client.put(dep as KubeObject);
    client.put(refRoute('first'));
    await reconcile('team-a/first');
    expect(podLabels(client)['portcullis.dev/route']).toBe('first');
  });

  it('a Deployment another controller runs is refused: TargetRefInvalid, nothing written to it', async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(
      teamDeployment({
        ownerReferences: [
          { apiVersion: 'example.com/v1', kind: 'App', name: 'web', uid: 'u', controller: true },
        ],
      }),
    );
    client.put(refRoute('first'));
    await reconcile('team-a/first');
    expect(readyOf(client, 'first')).toMatchObject({ status: 'False', reason: 'TargetRefInvalid' });
    expect(readyOf(client, 'first')?.['message']).toMatch(/controlled by App web/);
    expect(client.writes('Deployment')).toEqual([]);
  });
});

describe("route names of the auth server's objects", () => {
  it('are refused by a CEL rule of the CRD, and by the reconciler for a route made before it', async () => {
    const rules = (
      (buildCrd(rateLimitRouteCrd) as Obj)['spec']['versions'][0]['schema']['openAPIV3Schema'][
        'x-kubernetes-validations'
      ] as Obj[]
    ).map((v) => v['message']);
    expect(rules).toContain(RESERVED_ROUTE_NAME_RULE);
    const { client, reconcile } = await routeReconciler();
    client.put(routeObject(AUTH_SERVER_NAME));
    await reconcile(`team-a/${AUTH_SERVER_NAME}`);
    expect(readyOf(client, AUTH_SERVER_NAME)).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      message: RESERVED_ROUTE_NAME_RULE,
    });
    expect(client.writes('Deployment')).toEqual([]);
  });

  it("the auth server neither prunes nor takes over a route's child of its name", async () => {
    const client = new MemoryKubeClient();
    const { caches, clock } = await routeReconciler({ client });
    const owner = route(AUTH_SERVER_NAME);
    owner.metadata.uid = 'uid-route';
    client.put(routeDeployment(owner, settings, 'config'));
    const events = recordingEvents();
    const authServer = new AuthServerReconciler({
      client,
      applier: new Applier(client),
      caches,
      settings,
      clock,
      events,
      log: silent,
    });
    await flush();
    // No OAuthClient in the namespace: nothing of the auth server's to prune.
    await authServer.reconcile('team-a');
    expect(client.peek(resourceTypes.deployment, 'team-a', AUTH_SERVER_NAME)).toBeDefined();
    // An OAuthClient arrives: the name is taken, so the auth server says so instead of fighting.
    client.put(clientObject());
    await flush();
    const before = client.writes('Deployment').length;
    await authServer.reconcile('team-a');
    expect(client.writes('Deployment').length).toBe(before);
    const dep = client.peek(resourceTypes.deployment, 'team-a', AUTH_SERVER_NAME) as Obj;
    expect(dep['metadata']['ownerReferences'][0]).toMatchObject({
      kind: 'RateLimitRoute',
      uid: 'uid-route',
    });
    expect(events.list).toContainEqual(
      expect.objectContaining({
        reason: 'Conflict',
        message: expect.stringMatching(
          /Deployment portcullis-auth-server is controlled by RateLimitRoute portcullis-auth-server/,
        ),
      }),
    );
  });
});

describe('a targetRef route in a namespace being deleted', () => {
  it('lets its finalizer go without touching the Deployment (the operator may have lost its rights there already)', async () => {
    const { client, reconcile } = await routeReconciler();
    client.put(teamDeployment());
    client.put(refRoute('all'));
    await reconcile('team-a/all');
    client.put({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'team-a', deletionTimestamp: '2026-01-01T00:00:00Z' },
    });
    const live = client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as KubeObject;
    client.put({
      ...live,
      metadata: { ...live.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' },
    });
    const writes = client.writes('Deployment').length;
    client.failNext('get', new Error('forbidden: the RoleBinding is gone'), 'Deployment');
    await reconcile('team-a/all');
    expect(
      (client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all') as Obj)['metadata']['finalizers'],
    ).toEqual([]);
    expect(client.writes('Deployment').length).toBe(writes);
  });
});

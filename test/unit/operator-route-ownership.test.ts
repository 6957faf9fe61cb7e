// The operator never adopts a Deployment, Service or ConfigMap it did not create: a live object
// named like a child without a controller ownerReference to this route is left untouched, the
// route says Conflict (which object, what to do) and looks again later.
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../operator/runtime/clock.ts';
import { asRecord, type KubeObject } from '../../operator/runtime/kube-object.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { routeObject, routeReconciler, testInformer } from './operator-fixtures.ts';

/** blindServices: a Service cache that never sees anything, as the label-filtered one misses an unlabelled Service. */
function setup(options: { blindServices?: boolean } = {}) {
  const blind = ({ client, clock }: { client: MemoryKubeClient; clock: Clock }) => ({
    services: testInformer(client, clock, resourceTypes.service),
  });
  return routeReconciler(options.blindServices === true ? { caches: blind } : {});
}

function ready(client: MemoryKubeClient): Record<string, unknown> | undefined {
  const conditions = asRecord(
    client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all')?.['status'],
  )?.['conditions'];
  return Array.isArray(conditions)
    ? (conditions as Array<Record<string, unknown>>).find((c) => c['type'] === 'Ready')
    : undefined;
}

/** A team's own Service called like the route: no labels of the operator, no ownerReferences. */
function teamService(): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'all', namespace: 'team-a', labels: { app: 'user-service' } },
    spec: {
      type: 'ClusterIP',
      selector: { app: 'user-service' },
      ports: [{ name: 'web', port: 8080, targetPort: 8080, protocol: 'TCP' }],
    },
  };
}

const childWrites = (client: MemoryKubeClient) =>
  client.writes().filter((w) => w.subresource === undefined && w.kind !== 'RateLimitRoute');

describe('RateLimitRoute children: never adopted', () => {
  it('a foreign Service named like the route stays untouched; no child is written; Ready=False Conflict names it and says what to do', async () => {
    const { client, events, reconcile } = await setup();
    const before = client.put(teamService());
    const snapshot = structuredClone(before);
    client.put(routeObject());
    const result = await reconcile();

    expect(childWrites(client)).toEqual([]);
    expect(client.peek(resourceTypes.service, 'team-a', 'all')).toEqual(snapshot);
    expect(client.peek(resourceTypes.deployment, 'team-a', 'all')).toBeUndefined();
    expect(client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar')).toBeUndefined();
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'Conflict' });
    const message = String(ready(client)?.['message']);
    expect(message).toMatch(/Service all exists and has no controller ownerReference/);
    expect(message).toMatch(/kubectl -n team-a delete/);
    expect(events.list).toContainEqual(
      expect.objectContaining({ type: 'Warning', reason: 'Conflict', message }),
    );
    expect(result).toEqual({ waiting: true });
  });

  it('an unlabelled Service the label-filtered cache cannot see is found by a live GET', async () => {
    const { client, reconcile } = await setup({ blindServices: true });
    const before = client.put(teamService());
    client.put(routeObject());
    await reconcile();
    expect(client.requests).toContainEqual(
      expect.objectContaining({ verb: 'get', kind: 'Service', name: 'all' }),
    );
    expect(childWrites(client)).toEqual([]);
    expect(client.peek(resourceTypes.service, 'team-a', 'all')?.metadata.resourceVersion).toBe(
      before.metadata.resourceVersion,
    );
    expect(ready(client)).toMatchObject({ reason: 'Conflict' });
  });

  it('retrying in conflict writes nothing more (no hot loop: a delay, not an error backoff)', async () => {
    const { client, reconcile } = await setup();
    client.put(teamService());
    client.put(routeObject());
    await reconcile();
    const writes = client.writes().length;
    expect(await reconcile()).toEqual({ waiting: true });
    expect(client.writes().length).toBe(writes);
  });

  it('once the foreign Service is deleted, the route converges: all three children, owned, Progressing', async () => {
    const { client, reconcile } = await setup();
    client.put(teamService());
    client.put(routeObject());
    await reconcile();
    client.remove(resourceTypes.service, 'team-a', 'all');
    expect(await reconcile()).toEqual({});
    expect(childWrites(client).map((w) => `${w.kind}/${w.name}`)).toEqual([
      'ConfigMap/all-sidecar',
      'Deployment/all',
      'Service/all',
      'NetworkPolicy/all',
      'PodDisruptionBudget/all',
    ]);
    expect(client.peek(resourceTypes.service, 'team-a', 'all')?.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', uid: 'uid-all', controller: true }),
    ]);
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'Progressing' });
  });

  it('a ConfigMap controlled by something else and a Deployment of an earlier route of this name are both named', async () => {
    const { client, reconcile } = await setup();
    client.put({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'all-sidecar',
        namespace: 'team-a',
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: 'web',
            uid: 'uid-web',
            controller: true,
          },
        ],
      },
      data: { a: 'b' },
    });
    client.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'all',
        namespace: 'team-a',
        ownerReferences: [
          {
            apiVersion: 'portcullis.dev/v1alpha1',
            kind: 'RateLimitRoute',
            name: 'all',
            uid: 'uid-older',
            controller: true,
          },
        ],
      },
      spec: { replicas: 3 },
    });
    client.put(routeObject());
    await reconcile();
    expect(childWrites(client)).toEqual([]);
    const message = String(ready(client)?.['message']);
    expect(message).toMatch(/ConfigMap all-sidecar is controlled by Deployment web/);
    expect(message).toMatch(
      /Deployment all belongs to an earlier RateLimitRoute of this name \(uid uid-older\)/,
    );
    expect(
      (client.peek(resourceTypes.deployment, 'team-a', 'all')?.['spec'] as { replicas: number })
        .replicas,
    ).toBe(3);
  });

  it('its own children are recognised from the cache: after creation, no live reads and no writes', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    expect(client.requests.filter((r) => r.verb === 'get').map((r) => r.kind)).toEqual([
      'ConfigMap',
      'Deployment',
      'Service',
      'NetworkPolicy',
      'PodDisruptionBudget',
    ]);
    const requests = client.requests.length;
    await reconcile();
    expect(
      client.requests.slice(requests).filter((r) => r.verb !== 'list' && r.verb !== 'watch'),
    ).toEqual([]);
  });
});

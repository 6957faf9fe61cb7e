import { describe, expect, it, vi } from 'vitest';
import { LIMITER_FORM_RULE } from '../../operator/api/index.ts';
import { CONFIG_HASH_ANNOTATION } from '../../operator/resources/shared/metadata.ts';
import { KubeApiError } from '../../operator/runtime/errors.ts';
import { asRecord, type KubeObject } from '../../operator/runtime/kube-object.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { routeObject, routeReconciler } from './operator-fixtures.ts';

const setup = () => routeReconciler();

function status(client: MemoryKubeClient): Record<string, unknown> {
  return asRecord(client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all')?.['status']) ?? {};
}

function ready(client: MemoryKubeClient) {
  return (status(client)['conditions'] as Array<Record<string, unknown>>).find(
    (c) => c['type'] === 'Ready',
  );
}

function templateHash(dep: KubeObject | undefined): string | undefined {
  return (
    dep as unknown as
      { spec: { template: { metadata: { annotations: Record<string, string> } } } } | undefined
  )?.spec.template.metadata.annotations[CONFIG_HASH_ANNOTATION];
}

/** Plays the Deployment controller: every pod updated and ready. */
function markRolledOut(client: MemoryKubeClient, replicas: number) {
  const dep = client.peek(resourceTypes.deployment, 'team-a', 'all');
  if (dep === undefined) throw new Error('no deployment');
  client.put({
    ...dep,
    status: {
      observedGeneration: dep.metadata.generation,
      replicas,
      updatedReplicas: replicas,
      readyReplicas: replicas,
      availableReplicas: replicas,
    },
  });
}

describe('RateLimitRoute reconciler', () => {
  it('creates exactly the ConfigMap, Deployment, Service, NetworkPolicy and (two replicas) PodDisruptionBudget, owned by the route', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    const kinds = client
      .writes()
      .filter((w) => w.subresource === undefined)
      .map((w) => `${w.kind}/${w.name}`);
    expect(kinds).toEqual([
      'ConfigMap/all-sidecar',
      'Deployment/all',
      'Service/all',
      'NetworkPolicy/all',
      'PodDisruptionBudget/all',
    ]);
    const children = [
      [resourceTypes.configMap, 'all-sidecar'],
      [resourceTypes.deployment, 'all'],
      [resourceTypes.service, 'all'],
      [resourceTypes.networkPolicy, 'all'],
      [resourceTypes.podDisruptionBudget, 'all'],
    ] as const;
    for (const [type, name] of children) {
      expect(client.peek(type, 'team-a', name)?.metadata.ownerReferences).toEqual([
        expect.objectContaining({
          kind: 'RateLimitRoute',
          name: 'all',
          uid: expect.any(String),
          controller: true,
        }),
      ]);
    }
  });

  it('status: observedGeneration, Progressing until the pods are ready, then Ready with readyReplicas', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    expect(status(client)).toMatchObject({
      observedGeneration: 1,
      readyReplicas: 0,
      service: 'all',
    });
    expect(ready(client)).toMatchObject({
      status: 'False',
      reason: 'Progressing',
      observedGeneration: 1,
    });
    expect(String(ready(client)?.['message'])).toMatch(/Deployment all/);
    markRolledOut(client, 2);
    await reconcile();
    expect(status(client)).toMatchObject({ readyReplicas: 2 });
    expect(ready(client)).toMatchObject({ status: 'True', reason: 'Ready' });
  });

  it('a reconcile with nothing to change writes nothing', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    markRolledOut(client, 2);
    await reconcile();
    const before = client.writes().length;
    await reconcile();
    await reconcile();
    expect(client.writes().length).toBe(before);
  });

  it('a spec change reaches the ConfigMap and rolls the pods (new template hash)', async () => {
    const { client, reconcile, events } = await setup();
    client.put(routeObject());
    await reconcile();
    const hash1 = templateHash(client.peek(resourceTypes.deployment, 'team-a', 'all'));
    client.put(
      routeObject('all', { limiter: { replenishRate: 3, burstCapacity: 10, requestedTokens: 2 } }),
    );
    await reconcile();
    const cm = client.peek(resourceTypes.configMap, 'team-a', 'all-sidecar');
    expect(String((cm?.['data'] as Record<string, string>)['config.yaml'])).toMatch(
      /replenishRate: 3/,
    );
    expect(templateHash(client.peek(resourceTypes.deployment, 'team-a', 'all'))).not.toBe(hash1);
    expect(status(client)['observedGeneration']).toBe(2);
    expect(events.list.filter((e) => e.reason === 'Applied')).toHaveLength(2);
  });

  it('a deleted child is recreated and a hand-edited field is put back', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    client.remove(resourceTypes.service, 'team-a', 'all');
    const dep = client.peek(resourceTypes.deployment, 'team-a', 'all');
    if (dep === undefined) throw new Error('no deployment');
    const edited = structuredClone(dep) as KubeObject & { spec: { replicas: number } };
    edited.spec.replicas = 7;
    client.put(edited);
    await reconcile();
    expect(client.peek(resourceTypes.service, 'team-a', 'all')).toBeDefined();
    expect(
      (client.peek(resourceTypes.deployment, 'team-a', 'all')?.['spec'] as { replicas: number })
        .replicas,
    ).toBe(2);
  });

  it('an invalid spec gets Ready=False InvalidSpec with the field named, an event, and no children', async () => {
    const { client, reconcile, events } = await setup();
    client.put(
      routeObject('all', { limiter: { replenishRate: 1, burstCapacity: 1, requestedTokens: 2 } }),
    );
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(String(ready(client)?.['message'])).toMatch(/requestedTokens/);
    expect(events.list).toContainEqual(
      expect.objectContaining({ type: 'Warning', reason: 'InvalidSpec' }),
    );
    expect(client.writes().filter((w) => w.subresource === undefined)).toEqual([]);
  });

  it('a limiter with both forms gets InvalidSpec with the either/or rule as the message', async () => {
    const { client, reconcile } = await setup();
    client.put(
      routeObject('all', {
        limiter: {
          replenishRate: 1,
          burstCapacity: 10,
          rules: [{ name: 'all', limits: [{ replenishRate: 1, burstCapacity: 10 }] }],
        },
      }),
    );
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(String(ready(client)?.['message'])).toContain(`spec.limiter: ${LIMITER_FORM_RULE}`);
    expect(client.writes().filter((w) => w.subresource === undefined)).toEqual([]);
  });

  it('an API refusal shows as ApplyFailed and the error propagates (the queue retries)', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    client.failNext('apply', new KubeApiError(403, 'deployments.apps is forbidden'), 'Deployment');
    await expect(reconcile()).rejects.toThrow(/forbidden/);
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'ApplyFailed' });
  });

  it('lastTransitionTime moves only when the status does', async () => {
    const { client, clock, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    const t1 = ready(client)?.['lastTransitionTime'];
    await clock.advance(5000);
    client.put(
      routeObject('all', { limiter: { replenishRate: 2, burstCapacity: 10, requestedTokens: 2 } }),
    );
    await reconcile();
    expect(ready(client)?.['lastTransitionTime']).toBe(t1);
    markRolledOut(client, 2);
    await reconcile();
    await vi.waitFor(() => expect(ready(client)?.['lastTransitionTime']).not.toBe(t1));
  });
});

// The route's replica count: the scale subresource (.spec.target.replicas, .status.replicas,
// .status.selector) for kubectl scale rlr and an autoscaler on the route; spec.target.replicas
// omitted leaves Deployment.spec.replicas to whoever scales the Deployment.
import { describe, expect, it } from 'vitest';
import { rateLimitRouteCrd } from '../../operator/api/index.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { labelSelectorString, selectorString } from '../../operator/resources/route/scale.ts';
import { asRecord } from '../../operator/runtime/kube-object.ts';
import type { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { route, routeObject, settings, routeReconciler } from './operator-fixtures.ts';

const TARGET = { image: 'portcullis/user-service:test', port: 8081 };

const setup = () => routeReconciler();

const status = (client: MemoryKubeClient) =>
  asRecord(client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all')?.['status']) ?? {};
const ready = (client: MemoryKubeClient) =>
  (status(client)['conditions'] as Array<Record<string, unknown>>).find(
    (c) => c['type'] === 'Ready',
  );
const deploymentSpec = (client: MemoryKubeClient) =>
  asRecord(client.peek(resourceTypes.deployment, 'team-a', 'all')?.['spec']) ?? {};

/** Another actor (an autoscaler, kubectl scale deployment) sets the Deployment's replicas; the Deployment controller reports pods. */
function scaleDeployment(client: MemoryKubeClient, replicas: number, podsReady: number) {
  const dep = client.peek(resourceTypes.deployment, 'team-a', 'all');
  if (dep === undefined) throw new Error('no deployment');
  const next = structuredClone(dep);
  next['spec'] = { ...asRecord(dep['spec']), replicas };
  client.put(next);
  const scaled = client.peek(resourceTypes.deployment, 'team-a', 'all');
  if (scaled === undefined) throw new Error('no deployment');
  client.put({
    ...scaled,
    status: {
      observedGeneration: scaled.metadata.generation,
      replicas: podsReady,
      updatedReplicas: podsReady,
      readyReplicas: podsReady,
      availableReplicas: podsReady,
    },
  });
}

describe('RateLimitRoute scale subresource', () => {
  it('the CRD declares it over spec.target.replicas, status.replicas and status.selector; replicas has no default', () => {
    const crd = buildCrd(rateLimitRouteCrd) as {
      spec: {
        versions: Array<{
          subresources: unknown;
          // eslint-disable-next-line @typescript-eslint/no-explicit-any -- generated JSON, read in assertions
          schema: { openAPIV3Schema: Record<string, any> };
        }>;
      };
    };
    const [version] = crd.spec.versions;
    expect(version?.subresources).toEqual({
      status: {},
      scale: {
        specReplicasPath: '.spec.target.replicas',
        statusReplicasPath: '.status.replicas',
        labelSelectorPath: '.status.selector',
      },
    });
    const replicas =
      version?.schema.openAPIV3Schema['properties']['spec']['properties']['target']['properties'][
        'replicas'
      ];
    expect(replicas).toMatchObject({ type: 'integer', minimum: 0, maximum: 100 });
    expect(replicas['default']).toBeUndefined();
  });

  it('status reports the pods and their selector string, the one the Deployment and Service select by', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject());
    await reconcile();
    scaleDeployment(client, 2, 2);
    await reconcile();
    expect(status(client)).toMatchObject({
      replicas: 2,
      readyReplicas: 2,
      selector: 'app.kubernetes.io/instance=all,app.kubernetes.io/name=portcullis-gateway',
    });
    const selector = asRecord(deploymentSpec(client)['selector'])?.['matchLabels'] as Record<
      string,
      string
    >;
    expect(status(client)['selector']).toBe(selectorString(selector));
  });

  it("a Deployment's LabelSelector as the selector string the API server prints (a targetRef route reports its team Deployment's)", () => {
    expect(labelSelectorString({ matchLabels: { tier: 'front', app: 'web' } })).toBe(
      'app=web,tier=front',
    );
    expect(
      labelSelectorString({
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'track', operator: 'In', values: ['stable', 'canary'] },
          { key: 'env', operator: 'NotIn', values: ['dev'] },
          { key: 'zone', operator: 'Exists' },
          { key: 'legacy', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('app=web,env notin (dev),!legacy,track in (canary,stable),zone');
    // Not a selector that could stand for the counted pods: none rather than one matching every pod.
    for (const bad of [
      undefined,
      {},
      { matchLabels: {} },
      { matchExpressions: [{ key: 'a', operator: 'Gt', values: ['1'] }] },
      { matchExpressions: [{ key: 'a', operator: 'constructor' }] },
    ]) {
      expect(labelSelectorString(bad), JSON.stringify(bad)).toBeUndefined();
    }
  });

  it('a set spec.target.replicas is written into the Deployment (and a hand edit put back)', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject('all', { target: { ...TARGET, replicas: 3 } }));
    await reconcile();
    expect(deploymentSpec(client)['replicas']).toBe(3);
    scaleDeployment(client, 6, 0);
    await reconcile();
    expect(deploymentSpec(client)['replicas']).toBe(3);
  });

  it('spec.target.replicas omitted: the Deployment is rendered without replicas', () => {
    const r = route('all', { target: TARGET });
    expect(r.spec.target).toMatchObject({ image: TARGET.image, port: TARGET.port });
    expect(r.spec.target?.replicas).toBeUndefined();
    const dep = routeDeployment(r, settings, renderSidecarConfig(r, settings));
    expect(Object.keys(asRecord(dep['spec']) ?? {})).not.toContain('replicas');
  });

  it('spec.target.replicas omitted: replicas another actor set survive reconciles and a spec change; Ready counts the Deployment own replicas', async () => {
    const { client, reconcile } = await setup();
    client.put(routeObject('all', { target: TARGET }));
    await reconcile();
    scaleDeployment(client, 5, 4);
    client.put(
      routeObject('all', { target: TARGET, limiter: { replenishRate: 7, burstCapacity: 10 } }),
    );
    await reconcile();
    expect(client.writes('Deployment')).toHaveLength(2); // the spec change was applied...
    expect(deploymentSpec(client)['replicas']).toBe(5); // ...and left the count alone
    scaleDeployment(client, 5, 4);
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(String(ready(client)?.['message'])).toMatch(/of 5/);
    scaleDeployment(client, 5, 5);
    await reconcile();
    expect(ready(client)).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(String(ready(client)?.['message'])).toMatch(/all 5 pods/);
  });
});

// One field manager per controller, on a real API server: the route controller writes as
// portcullis-route. An object an older operator applied under its single name
// (portcullis-operator), with a field the operator no longer sets, is handed over on the first
// reconcile of the new operator: afterwards only the new manager holds applied fields, and the
// field nobody wants is gone. Without the hand-over the former manager would keep owning that
// field, and no apply of the new manager could ever remove it. Covered: a ConfigMap (cached as
// metadata only), the Deployment (cached whole) and the route's status subresource.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIELD_MANAGERS, FORMER_FIELD_MANAGER } from '../../operator/app.ts';
import { routeConfigMapName } from '../../operator/resources/route/names.ts';
import { createHttpKubeClient } from '../../operator/runtime/http-kube-client.ts';
import type { KubeClient } from '../../operator/runtime/kube-client.ts';
import type { KubeObject } from '../../operator/runtime/kube-object.ts';
import { resourceTypes, type ResourceType } from '../../operator/runtime/resource-types.ts';
import {
  eventually,
  operatorForbidden,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-fm';
const FORMER_LABEL = 'portcullis.dev/set-by-an-older-operator';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from the API server, read in assertions

let env: OperatorEnv;
let operator: RunningOperator | undefined;
let admin: KubeClient;

beforeAll(async () => {
  env = await startOperatorEnv([NS]);
  const kc = new KubeConfig();
  kc.loadFromFile(env.cluster.kubeconfigPath);
  admin = createHttpKubeClient(kc, { fieldManager: 'test-admin' });
}, 120_000);

afterAll(async () => {
  await operator?.program.stop();
  await env?.stop();
});

const minimal = (o: KubeObject): KubeObject => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  metadata: { name: o.metadata.name, namespace: o.metadata.namespace },
});
/** Field managers holding applied fields of obj (of its main resource, or of its status). */
const appliers = (o: KubeObject | undefined, subresource?: string) =>
  (o?.metadata.managedFields ?? [])
    .filter((e) => e.operation === 'Apply' && (e.subresource ?? '') === (subresource ?? ''))
    .map((e) => e.manager)
    .sort();

/** What an older operator left: the same contents and one more label, applied as the former manager only. */
async function leftByFormerOperator(type: ResourceType, name: string): Promise<void> {
  const live = (await admin.get(type, NS, name)) as Obj;
  const { metadata, status: _status, ...contents } = live;
  const body = {
    ...contents,
    metadata: {
      name,
      namespace: NS,
      labels: { ...metadata['labels'], [FORMER_LABEL]: 'x' },
      annotations: metadata['annotations'],
      ownerReferences: metadata['ownerReferences'],
    },
  } as KubeObject;
  await admin.apply(body, undefined, FORMER_FIELD_MANAGER);
  await admin.apply(minimal(body), undefined, FIELD_MANAGERS.route); // the new manager gives up everything
  expect(appliers(await admin.get(type, NS, name))).toEqual([FORMER_FIELD_MANAGER]);
}

describe('field managers', () => {
  it(
    "what the former single manager applied is handed over to the controller's own, and a field it alone held is removed",
    { timeout: 120_000 },
    async () => {
      operator = await startOperator(env, 'op-fm-1');
      const created = await env.cluster.request(
        'POST',
        `/apis/portcullis.dev/v1alpha1/namespaces/${NS}/ratelimitroutes`,
        {
          apiVersion: 'portcullis.dev/v1alpha1',
          kind: 'RateLimitRoute',
          metadata: { name: 'web' },
          spec: {
            target: { image: 'portcullis/user-service:test', port: 8081, replicas: 1 },
            limiter: { replenishRate: 1, burstCapacity: 10 },
          },
        },
      );
      expect(created.status).toBe(201);
      const route = await eventually('route status', async () => {
        const r = await admin.get(resourceTypes.rateLimitRoute, NS, 'web');
        return r?.['status'] !== undefined &&
          (await admin.get(resourceTypes.configMap, NS, routeConfigMapName('web'))) !== undefined &&
          (await admin.get(resourceTypes.deployment, NS, 'web')) !== undefined
          ? r
          : undefined;
      });
      // The new operator's own writes: its controller's manager, never the former one.
      expect(
        appliers(await admin.get(resourceTypes.configMap, NS, routeConfigMapName('web'))),
      ).toEqual([FIELD_MANAGERS.route]);
      expect(appliers(route, 'status')).toEqual([FIELD_MANAGERS.route]);
      await operator.program.stop();
      operator = undefined;

      // The state an upgrade starts from.
      await leftByFormerOperator(resourceTypes.configMap, routeConfigMapName('web'));
      await leftByFormerOperator(resourceTypes.deployment, 'web');
      const live = (await admin.get(resourceTypes.rateLimitRoute, NS, 'web')) as KubeObject;
      await admin.apply(
        { ...minimal(live), status: live['status'] },
        'status',
        FORMER_FIELD_MANAGER,
      );
      await admin.apply(minimal(live), 'status', FIELD_MANAGERS.route);
      expect(appliers(await admin.get(resourceTypes.rateLimitRoute, NS, 'web'), 'status')).toEqual([
        FORMER_FIELD_MANAGER,
      ]);

      operator = await startOperator(env, 'op-fm-2');
      for (const [type, name] of [
        [resourceTypes.configMap, routeConfigMapName('web')],
        [resourceTypes.deployment, 'web'],
      ] as const) {
        const after = await eventually(`${type.kind} handed over`, async () => {
          const o = await admin.get(type, NS, name);
          return appliers(o).join() === FIELD_MANAGERS.route ? o : undefined;
        });
        expect(after?.metadata.labels?.[FORMER_LABEL]).toBeUndefined();
        expect(after?.metadata.labels?.['app.kubernetes.io/managed-by']).toBe(
          'portcullis-operator',
        );
      }
      const cm = (await admin.get(resourceTypes.configMap, NS, routeConfigMapName('web'))) as Obj;
      expect(Object.keys(cm['data'])).toEqual(['config.yaml']);
      const status = await eventually('status handed over', async () => {
        const r = await admin.get(resourceTypes.rateLimitRoute, NS, 'web');
        return appliers(r, 'status').join() === FIELD_MANAGERS.route ? r?.['status'] : undefined;
      });
      expect((status as Obj)['conditions'].map((c: Obj) => c['type'])).toContain('Ready');
      expect(operatorForbidden(env)).toEqual([]);
    },
  );
});

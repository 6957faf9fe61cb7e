// RateLimitPolicy on a real API server with Gateway API's own CRDs (experimental channel, from the
// sigs.k8s.io/gateway-api module): the operator, as the chart's ServiceAccount, runs the decision
// service, keeps an ExternalAuth filter on the targeted HTTPRoute rules next to the team's own
// filters, reports status.ancestors the Gateway API way, and takes everything away again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TARGET_NAMESPACE_RULE } from '../../operator/api/index.ts';
import {
  startControllerManager,
  type ControllerManager,
} from '../harness/k8s/controller-manager.ts';
import { eventually, kget, operatorForbidden } from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';
import { gatewayApiCrdFiles } from '../harness/k8s/gateway-api.ts';

const NS = 'team-p';
const OTHER = 'team-q';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env, operator } = operatorOnApiServer([NS, OTHER], 'op-policy', {
  PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
});
let kcm: ControllerManager | undefined;

beforeAll(async () => {
  for (const file of gatewayApiCrdFiles('experimental')) {
    const r = await env.cluster.kubectl(['apply', '--server-side', '-f', file]);
    expect(r.code, r.stderr).toBe(0);
  }
  // kubectl wait fails outright on a CRD whose status has no conditions yet: ask again until Established.
  await eventually('Gateway API CRDs established', async () => {
    const r = await env.cluster.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=10s',
      'crd/httproutes.gateway.networking.k8s.io',
      'crd/gateways.gateway.networking.k8s.io',
    ]);
    return r.code === 0;
  });
  // Deleting a policy leaves its children to the garbage collector, as any owner does.
  kcm = startControllerManager(env.cluster, ['garbagecollector']);
}, 120_000);
afterAll(async () => {
  await kcm?.stop();
});

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}
async function del(ns: string, what: string) {
  const r = await env.cluster.kubectl(['-n', ns, 'delete', what, '--wait=false']);
  expect(r.code, r.stderr).toBe(0);
}

const TEAM_FILTER =
  '{ type: RequestHeaderModifier, requestHeaderModifier: { set: [{ name: x-team, value: "1" }] } }';
const httpRoute = (name: string, ns = NS) => `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: ${name}, namespace: ${ns} }
spec:
  parentRefs: [{ name: public }]
  rules:
    - name: api
      matches: [{ path: { type: PathPrefix, value: /api } }]
      filters: [${TEAM_FILTER}]
      backendRefs: [{ name: shop, port: 80 }]
    - name: web
      backendRefs: [{ name: shop, port: 80 }]
`;
const policy = (name: string, target: string, extra = '') => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitPolicy
metadata: { name: ${name}, namespace: ${NS} }
spec:
  targetRefs: [{ group: gateway.networking.k8s.io, kind: HTTPRoute, name: ${target}${extra} }]
  limiter: { replenishRate: 1, burstCapacity: 10 }
`;

const getRoute = async (name: string, ns = NS) =>
  (await kget(env.cluster, ['-n', ns, 'httproute', name])) as Obj | undefined;
const filters = (route: Obj | undefined, rule: number): Obj[] =>
  route?.['spec']['rules'][rule]['filters'] ?? [];
const externalAuths = (route: Obj | undefined, rule: number) =>
  filters(route, rule).filter((f) => f['type'] === 'ExternalAuth');
const accepted = (p: Obj | undefined): Obj | undefined =>
  p?.['status']?.['ancestors']?.[0]?.['conditions']?.find((c: Obj) => c['type'] === 'Accepted');
const getPolicy = async (name: string) =>
  (await kget(env.cluster, ['-n', NS, 'ratelimitpolicy', name])) as Obj | undefined;

describe('RateLimitPolicy on Gateway API HTTPRoutes', () => {
  it('targets a real HTTPRoute: Accepted, the decision service rendered, the ExternalAuth filter wired beside the team filter', async () => {
    await apply(httpRoute('shop'));
    await apply(policy('orders', 'shop'));
    const p = await eventually('orders accepted', async () => {
      const got = await getPolicy('orders');
      return accepted(got)?.['status'] === 'True' ? got : undefined;
    });
    expect(p?.['status']['ancestors'][0]).toMatchObject({
      ancestorRef: {
        group: 'gateway.networking.k8s.io',
        kind: 'Gateway',
        name: 'public',
        namespace: NS,
      },
      controllerName: 'portcullis.dev/operator',
    });
    const wired = p?.['status']['ancestors'][0]['conditions'].find(
      (c: Obj) => c['type'] === 'portcullis.dev/Wired',
    );
    expect(wired).toMatchObject({ status: 'True', reason: 'ExternalAuthFilter' });
    expect(p?.['metadata']['finalizers']).toContain('portcullis.dev/external-auth');
    for (const kind of ['deployment', 'service', 'networkpolicy', 'poddisruptionbudget']) {
      const child = (await kget(env.cluster, ['-n', NS, kind, 'orders-decision'])) as
        Obj | undefined;
      expect(child?.['metadata']['ownerReferences'], kind).toEqual([
        expect.objectContaining({ kind: 'RateLimitPolicy', name: 'orders', controller: true }),
      ]);
    }
    const cm = (await kget(env.cluster, ['-n', NS, 'configmap', 'orders-decision-sidecar'])) as Obj;
    expect(cm['data']['config.yaml']).toMatch(/^mode: decision/m);
    const svc = (await kget(env.cluster, ['-n', NS, 'service', 'orders-decision'])) as Obj;
    expect(svc['spec']['ports'].map((port: Obj) => port['name'])).toEqual([
      'http',
      'grpc',
      'metrics',
    ]);

    const route = await eventually('filter wired', async () => {
      const r = await getRoute('shop');
      return externalAuths(r, 0).length === 1 && externalAuths(r, 1).length === 1 ? r : undefined;
    });
    expect(filters(route, 0)[0]).toMatchObject({ type: 'RequestHeaderModifier' });
    expect(externalAuths(route, 0)[0]).toMatchObject({
      externalAuth: { protocol: 'GRPC', backendRef: { name: 'orders-decision', port: 9191 } },
    });
    // The team re-applies its route as it wrote it: the operator puts the filter back.
    await apply(httpRoute('shop'));
    await eventually(
      'filter restored',
      async () => externalAuths(await getRoute('shop'), 1).length === 1,
    );
    expect(filters(await getRoute('shop'), 0)[0]).toMatchObject({ type: 'RequestHeaderModifier' });
  });

  it('a missing target is TargetNotFound, then Accepted once the route appears', async () => {
    await apply(policy('later', 'not-yet'));
    await eventually(
      'TargetNotFound',
      async () => accepted(await getPolicy('later'))?.['reason'] === 'TargetNotFound',
    );
    expect(accepted(await getPolicy('later'))?.['status']).toBe('False');
    await apply(httpRoute('not-yet'));
    await eventually(
      'Accepted',
      async () => accepted(await getPolicy('later'))?.['reason'] === 'Accepted',
      60_000,
    );
    await eventually(
      'filter wired',
      async () => externalAuths(await getRoute('not-yet'), 1).length === 1,
    );
  });

  it('the newer of two policies on one route is Conflicted and adds no filter', async () => {
    await apply(policy('second', 'shop', ', sectionName: web'));
    await eventually(
      'second Conflicted',
      async () => accepted(await getPolicy('second'))?.['reason'] === 'Conflicted',
    );
    expect(accepted(await getPolicy('second'))?.['message']).toContain('orders');
    expect(accepted(await getPolicy('orders'))?.['reason']).toBe('Accepted');
    const route = await getRoute('shop');
    expect(externalAuths(route, 1).map((f) => f['externalAuth']['backendRef']['name'])).toEqual([
      'orders-decision',
    ]);
  });

  it('deleting the policy removes the filter (keeping the team filter) and, through owner references, its objects', async () => {
    await del(NS, 'ratelimitpolicy/orders');
    await eventually('policy gone', async () => (await getPolicy('orders')) === undefined);
    const route = await getRoute('shop');
    // The policy that lost may already hold rule web (below): only orders' filter must be gone.
    for (const rule of [0, 1])
      expect(
        externalAuths(route, rule).map((f) => f['externalAuth']['backendRef']['name']),
      ).not.toContain('orders-decision');
    expect(filters(route, 0)).toEqual([expect.objectContaining({ type: 'RequestHeaderModifier' })]);
    await eventually(
      'children collected',
      async () => {
        for (const kind of [
          'deployment',
          'service',
          'networkpolicy',
          'configmap/orders-decision-sidecar',
        ])
          if (
            (await kget(env.cluster, [
              '-n',
              NS,
              ...(kind.includes('/') ? [kind] : [kind, 'orders-decision']),
            ])) !== undefined
          )
            return false;
        return true;
      },
      60_000,
    );
    // The conflict is over: the policy that lost now wins the rule it names.
    await eventually(
      'second Accepted',
      async () => accepted(await getPolicy('second'))?.['reason'] === 'Accepted',
      60_000,
    );
    await eventually('second wired on web only', async () => {
      const r = await getRoute('shop');
      return externalAuths(r, 1).length === 1 && externalAuths(r, 0).length === 0;
    });
  });

  it("a policy never reaches another namespace's HTTPRoute: refused at admission, and a same-named route elsewhere is untouched", async () => {
    await apply(httpRoute('elsewhere', OTHER));
    const r = await env.cluster.kubectl(['apply', '-f', '-'], {
      input: policy('reach', 'elsewhere', `, namespace: ${OTHER}`),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(TARGET_NAMESPACE_RULE);
    // Same name, own namespace: the route is looked up in team-p only.
    await apply(policy('reach', 'elsewhere'));
    await eventually(
      'TargetNotFound',
      async () => accepted(await getPolicy('reach'))?.['reason'] === 'TargetNotFound',
    );
    expect(externalAuths(await getRoute('elsewhere', OTHER), 0)).toEqual([]);
    expect(externalAuths(await getRoute('elsewhere', OTHER), 1)).toEqual([]);
    expect(operatorForbidden(env)).toEqual([]);
    expect((await operator.readyz()).startsWith('ok')).toBe(true);
  });
});

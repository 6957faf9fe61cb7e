// spec.upstream.service: a route in front of a Service a team already runs. The operator renders a
// gateway Deployment of sidecars only, forwarding to http://<service>.<ns>.svc:<port>, and the
// route's own Service in front of the sidecars; the team's workload and Service are not touched.
import { afterEach, describe, expect, it } from 'vitest';
import {
  rateLimitRouteCrd,
  rateLimitRouteSchema,
  WORKLOAD_RULE,
} from '../../operator/api/index.ts';
import { renderSidecarConfig } from '../../operator/resources/route/config-map.ts';
import { routeDeployment } from '../../operator/resources/route/deployment.ts';
import { routeService } from '../../operator/resources/route/service.ts';
import { asRecord, type KubeObject } from '../../operator/runtime/kube-object.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import { buildCrd } from '../../scripts/crds/build-crd.ts';
import { settings, routeReconciler } from './operator-fixtures.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered JSON, read in assertions

const UPSTREAM = { service: { name: 'user-service', port: 8081 }, replicas: 3 };
const TARGET = { image: 'portcullis/user-service:test', port: 8081 };

function gatewayObject(spec: Record<string, unknown> = { upstream: UPSTREAM }): KubeObject {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name: 'all', namespace: 'team-a', uid: 'uid-all', generation: 1 },
    spec: { limiter: { replenishRate: 1, burstCapacity: 10 }, ...spec },
  };
}
const gateway = (spec?: Record<string, unknown>) => rateLimitRouteSchema.parse(gatewayObject(spec));

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('spec.upstream: the API', () => {
  it.each([
    ['both target and upstream', { target: TARGET, upstream: UPSTREAM }],
    ['neither', {}],
  ])('refuses %s with the rule message', (_what, spec) => {
    const parsed = rateLimitRouteSchema.safeParse(gatewayObject(spec));
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((i) => i.message)).toContain(WORKLOAD_RULE);
  });

  it('accepts upstream alone, replicas optional; refuses a Service name that is no DNS-1035 label', () => {
    expect(gateway().spec.upstream).toEqual(UPSTREAM);
    expect(
      gateway({ upstream: { service: UPSTREAM.service } }).spec.upstream?.replicas,
    ).toBeUndefined();
    expect(
      rateLimitRouteSchema.safeParse(
        gatewayObject({ upstream: { service: { name: 'User_Service', port: 80 } } }),
      ).success,
    ).toBe(false);
  });

  it('the CRD carries the same rule as CEL on spec, with the same message', () => {
    const crd = buildCrd(rateLimitRouteCrd) as Obj;
    const spec = crd['spec']['versions'][0]['schema']['openAPIV3Schema']['properties']['spec'];
    expect(spec['x-kubernetes-validations']).toContainEqual({
      rule: '[has(self.target), has(self.upstream), has(self.targetRef)].filter(x, x).size() == 1',
      message: WORKLOAD_RULE,
    });
    expect(spec['required'] ?? []).not.toContain('target');
    expect(spec['properties']['upstream']['required']).toEqual(['service']);
  });
});

describe('spec.upstream: rendered children', () => {
  it('the sidecar forwards to the Service through cluster DNS, and accepts that config', () => {
    const config = parseSidecarConfigText(renderSidecarConfig(gateway(), settings));
    expect(config.upstream?.url).toBe('http://user-service.team-a.svc:8081');
    // No target container shares the pod: the preferred ports, even the one equal to the Service port.
    expect(config.listen.port).toBe(settings.sidecarPort);
    expect(config.admin.port).toBe(settings.sidecarAdminPort);
  });

  it('the Deployment holds the sidecar only, at upstream.replicas, with no target volume', () => {
    const r = gateway();
    const dep = routeDeployment(r, settings, renderSidecarConfig(r, settings)) as Obj;
    const pod = dep['spec']['template']['spec'];
    expect(pod['containers'].map((c: Obj) => c['name'])).toEqual(['sidecar']);
    expect(pod['volumes'].map((v: Obj) => v['name'])).not.toContain('target-tmp');
    expect(dep['spec']['replicas']).toBe(3);
    const auto = gateway({ upstream: { service: UPSTREAM.service } });
    expect(Object.keys(routeDeployment(auto, settings, 'x')['spec'] as Obj)).not.toContain(
      'replicas',
    );
  });

  it('the route Service selects the gateway pods, not the team ones', () => {
    const svc = routeService(gateway(), settings) as Obj;
    expect(svc['metadata']['name']).toBe('all');
    expect(svc['spec']['selector']).toEqual({
      'app.kubernetes.io/name': 'portcullis-gateway',
      'app.kubernetes.io/instance': 'all',
    });
  });

  it('reconciled: the gateway children are created and the team Service is not written', async () => {
    const { client, reconcile } = await routeReconciler();
    const team = client.put({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'user-service', namespace: 'team-a' },
      spec: { selector: { app: 'user-service' }, ports: [{ port: 8081 }] },
    });
    client.put(gatewayObject());
    await reconcile();
    const written = client
      .writes()
      .filter((w) => w.subresource === undefined)
      .map((w) => `${w.kind}/${w.name}`);
    expect(written).toEqual(
      expect.arrayContaining(['ConfigMap/all-sidecar', 'Deployment/all', 'Service/all']),
    );
    expect(written).not.toContain('Service/user-service');
    expect(client.peek(resourceTypes.service, 'team-a', 'user-service')).toEqual(team);
    const status =
      asRecord(client.peek(resourceTypes.rateLimitRoute, 'team-a', 'all')?.['status']) ?? {};
    expect((status['conditions'] as Obj[])[0]).toMatchObject({ reason: 'Progressing' });
    expect(String((status['conditions'] as Obj[])[0]?.['message'])).toMatch(/Deployment all/);
  });
});

// spec.upstream.service on a real API server, as the chart's ServiceAccount: a route in front of a
// workload a team already runs. The API server accepts it and refuses target and upstream together
// (or neither) with the rule's message; the operator renders a gateway Deployment of sidecars only
// forwarding to the team's Service and the route's Service in front of it, and never writes the
// team's Deployment or Service.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { WORKLOAD_RULE } from '../../operator/api/index.ts';
import {
  eventually,
  kget,
  operatorForbidden,
  operatorWrites,
} from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-u';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env } = operatorOnApiServer([NS], 'op-upstream', { PORTCULLIS_RESYNC_INTERVAL_MS: '2000' });

const TEAM = `apiVersion: apps/v1
kind: Deployment
metadata: { name: user-service, namespace: ${NS}, labels: { app: user-service } }
spec:
  replicas: 2
  selector: { matchLabels: { app: user-service } }
  template:
    metadata: { labels: { app: user-service } }
    spec: { containers: [{ name: app, image: example/user-service:1.0, ports: [{ containerPort: 8081 }] }] }
---
apiVersion: v1
kind: Service
metadata: { name: user-service, namespace: ${NS} }
spec: { selector: { app: user-service }, ports: [{ name: http, port: 8081, targetPort: 8081 }] }
`;

const route = (name: string, spec: string) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  limiter: { replenishRate: 1, burstCapacity: 10 }
${spec}`;

async function apply(yaml: string) {
  return env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
}

describe('RateLimitRoute with spec.upstream.service', () => {
  it('renders a gateway of sidecars only in front of the team Service; the team objects are never written', async () => {
    expect((await apply(TEAM)).code).toBe(0);
    const teamBefore = [
      (await kget(env.cluster, ['-n', NS, 'deployment', 'user-service'])) as Obj,
      (await kget(env.cluster, ['-n', NS, 'service', 'user-service'])) as Obj,
    ];
    const since = new Date().toISOString();
    const r = await apply(
      route('gw', '  upstream: { service: { name: user-service, port: 8081 }, replicas: 2 }\n'),
    );
    expect(r.code, r.stderr).toBe(0);

    const dep = (await eventually('gateway Deployment', () =>
      kget(env.cluster, ['-n', NS, 'deployment', 'gw']),
    )) as Obj;
    expect(dep['spec']['replicas']).toBe(2);
    const pod = dep['spec']['template']['spec'];
    expect(pod['containers'].map((c: Obj) => c['name'])).toEqual(['sidecar']);
    const cm = (await kget(env.cluster, ['-n', NS, 'configmap', 'gw-sidecar'])) as Obj;
    expect((parse(cm['data']['config.yaml']) as Obj)['upstream']).toEqual({
      url: `http://user-service.${NS}.svc:8081`,
    });
    const svc = (await eventually('route Service', () =>
      kget(env.cluster, ['-n', NS, 'service', 'gw']),
    )) as Obj;
    expect(svc['spec']['selector']).toEqual({
      'app.kubernetes.io/name': 'portcullis-gateway',
      'app.kubernetes.io/instance': 'gw',
    });
    const ready = async () =>
      (
        (((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'gw'])) as Obj)['status'] ?? {})[
          'conditions'
        ] ?? []
      ).find((c: Obj) => c['type'] === 'Ready');
    await eventually('Progressing', async () => (await ready())?.['reason'] === 'Progressing');

    const teamAfter = [
      (await kget(env.cluster, ['-n', NS, 'deployment', 'user-service'])) as Obj,
      (await kget(env.cluster, ['-n', NS, 'service', 'user-service'])) as Obj,
    ];
    expect(teamAfter.map((o) => o['metadata']['resourceVersion'])).toEqual(
      teamBefore.map((o) => o['metadata']['resourceVersion']),
    );
    expect(operatorWrites(env, since).filter((e) => e.objectRef?.name === 'user-service')).toEqual(
      [],
    );
    expect(operatorForbidden(env)).toEqual([]);
  });

  it.each([
    [
      'target and upstream together',
      '  target: { image: example/user-service:1.0, port: 8081 }\n  upstream: { service: { name: user-service, port: 8081 } }\n',
    ],
    ['neither target nor upstream', ''],
  ])('the API server refuses %s with the rule message', async (_what, spec) => {
    const r = await apply(route('both', spec));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(WORKLOAD_RULE);
    expect(await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'both'])).toBeUndefined();
  });

  it('the scale subresource (over spec.target.replicas) is refused for an upstream route; its count is spec.upstream.replicas', async () => {
    const r = await env.cluster.kubectl([
      '-n',
      NS,
      'scale',
      'ratelimitroute',
      'gw',
      '--replicas=4',
    ]);
    expect(r.code).not.toBe(0);
    expect(
      ((await kget(env.cluster, ['-n', NS, 'deployment', 'gw'])) as Obj)['spec']['replicas'],
    ).toBe(2);
  });
});

// The NetworkPolicies that keep the limiter from being walked around, on a real kube-apiserver,
// made by the operator as the chart's ServiceAccount (exactly the chart's RBAC): a targetRef
// route's over the team's pods running the sidecar (sidecar ports only), an upstream route's over
// the pods of the upstream Service (the gateway pods only), both accepted as rendered and selecting
// what the API server holds; spec.networkPolicy.enabled=false deletes them. The API server refuses
// the route's own Service as upstream (CEL), and the operator an ExternalName upstream.
import { describe, expect, it } from 'vitest';
import { UPSTREAM_SELF_RULE } from '../../operator/api/index.ts';
import { eventually, kget, operatorForbidden } from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-np';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env } = operatorOnApiServer([NS], 'op-netpol', { PORTCULLIS_RESYNC_INTERVAL_MS: '2000' });

const TEAM = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: ${NS} }
spec:
  replicas: 1
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec: { containers: [{ name: app, image: example/web:1.0, ports: [{ containerPort: 8080 }] }] }
---
apiVersion: v1
kind: Service
metadata: { name: user-service, namespace: ${NS} }
spec: { selector: { app: user-service, tier: api }, ports: [{ name: http, port: 8081 }] }
---
apiVersion: v1
kind: Service
metadata: { name: elsewhere, namespace: ${NS} }
spec: { type: ExternalName, externalName: redis.portcullis-system.svc.cluster.local }
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
const policy = (name: string) =>
  kget(env.cluster, ['-n', NS, 'networkpolicy', name]) as Promise<Obj | undefined>;
const ready = async (name: string) =>
  (
    ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', name])) as Obj | undefined)?.[
      'status'
    ]?.['conditions'] as Obj[] | undefined
  )?.find((c) => c['type'] === 'Ready');

describe('operator: NetworkPolicies of targetRef and upstream routes on a real API server', () => {
  it("targetRef: the team's pods carrying the sidecar admit only its two ports, never the app's 8080", async () => {
    expect((await apply(TEAM)).code).toBe(0);
    const r = await apply(route('web', '  targetRef: { name: web, port: 8080 }\n'));
    expect(r.code, r.stderr).toBe(0);
    const np = await eventually('targetRef NetworkPolicy', () => policy('web'));
    const dep = await eventually('sidecar injected', async () => {
      const d = (await kget(env.cluster, ['-n', NS, 'deployment', 'web'])) as Obj;
      return d['spec']['template']['spec']['containers'].length === 2 ? d : undefined;
    });
    expect(dep['spec']['template']['metadata']['labels']).toMatchObject(
      np['spec']['podSelector']['matchLabels'],
    );
    expect(np['spec']['podSelector']['matchLabels']).toEqual({
      'portcullis.dev/sidecar': 'true',
      'portcullis.dev/route': 'web',
    });
    const sidecarPorts = dep['spec']['template']['spec']['containers'][1]['ports'].map(
      (p: Obj) => p['containerPort'],
    );
    expect(np['spec']['ingress']).toEqual([
      { ports: sidecarPorts.map((port: number) => ({ protocol: 'TCP', port })) },
    ]);
    expect(sidecarPorts).not.toContain(8080);
    expect(np['metadata']['ownerReferences']).toEqual([
      expect.objectContaining({ kind: 'RateLimitRoute', name: 'web', controller: true }),
    ]);
  });

  it("upstream: the Service's pods admit only the gateway pods; the gateway's own pods only the sidecar ports", async () => {
    const r = await apply(
      route('gw', '  upstream: { service: { name: user-service, port: 8081 } }\n'),
    );
    expect(r.code, r.stderr).toBe(0);
    const up = await eventually('upstream NetworkPolicy', () => policy('gw.upstream'));
    expect(up['spec']['podSelector']).toEqual({
      matchLabels: { app: 'user-service', tier: 'api' },
    });
    const gateway = (await eventually('gateway Deployment', () =>
      kget(env.cluster, ['-n', NS, 'deployment', 'gw']),
    )) as Obj;
    expect(up['spec']['ingress']).toEqual([
      { from: [{ podSelector: { matchLabels: gateway['spec']['selector']['matchLabels'] } }] },
    ]);
    expect(gateway['spec']['template']['metadata']['labels']).toMatchObject(
      up['spec']['ingress'][0]['from'][0]['podSelector']['matchLabels'],
    );
    expect((await policy('gw'))?.['spec']['ingress']).toEqual([
      {
        ports: [
          { protocol: 'TCP', port: 8080 },
          { protocol: 'TCP', port: 9090 },
        ],
      },
    ]);
  });

  it('spec.networkPolicy.enabled=false deletes the policies of that route only', async () => {
    const off = await env.cluster.kubectl([
      '-n',
      NS,
      'patch',
      'ratelimitroute',
      'gw',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { networkPolicy: { enabled: false } } }),
    ]);
    expect(off.code, off.stderr).toBe(0);
    await eventually(
      'gw policies deleted',
      async () => (await policy('gw')) === undefined && (await policy('gw.upstream')) === undefined,
    );
    expect(await policy('web')).toBeDefined();
  });

  it("the API server refuses the route's own Service as upstream; the operator an ExternalName one", async () => {
    const self = await apply(route('loop', '  upstream: { service: { name: loop, port: 80 } }\n'));
    expect(self.code).not.toBe(0);
    expect(self.stderr).toContain(UPSTREAM_SELF_RULE);

    expect(
      (await apply(route('ext', '  upstream: { service: { name: elsewhere, port: 6379 } }\n')))
        .code,
    ).toBe(0);
    const condition = await eventually('UpstreamInvalid', async () =>
      (await ready('ext'))?.['reason'] === 'UpstreamInvalid' ? ready('ext') : undefined,
    );
    expect(condition?.['message']).toContain('ExternalName');
    expect(await kget(env.cluster, ['-n', NS, 'deployment', 'ext'])).toBeUndefined();
    expect(operatorForbidden(env)).toEqual([]);
  });
});

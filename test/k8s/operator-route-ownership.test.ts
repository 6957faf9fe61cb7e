// On a real API server, as the chart's ServiceAccount: a team's own Service named like a new
// RateLimitRoute is never adopted (server-side apply with force would take it over). It stays
// exactly as it was, the route reports Conflict with a Warning Event, and once the Service is
// deleted the route converges on its own (the operator looks again later).
import { describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  operatorForbidden,
  operatorWrites,
  resyncs,
} from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-o';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env, operator } = operatorOnApiServer([NS], 'op-ownership', {
  PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
});

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}
const ready = async () =>
  (
    ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'web'])) as Obj | undefined)?.[
      'status'
    ]?.['conditions'] ?? []
  ).find((c: Obj) => c['type'] === 'Ready');
const events = async () => {
  const r = await env.cluster.kubectl([
    '-n',
    NS,
    'get',
    'events',
    '--field-selector',
    'involvedObject.name=web,involvedObject.kind=RateLimitRoute',
    '-o',
    'json',
  ]);
  return JSON.parse(r.stdout)['items'] as Obj[];
};

describe('operator: a foreign object named like a child is never adopted', () => {
  it('the team Service stays untouched (resourceVersion and content) and the route reports Conflict with a Warning Event', async () => {
    await apply(`apiVersion: v1
kind: Service
metadata: { name: web, namespace: ${NS}, labels: { app: web } }
spec: { selector: { app: web }, ports: [{ name: web, port: 8080, targetPort: 8080 }] }
`);
    const before = (await kget(env.cluster, ['-n', NS, 'service', 'web'])) as Obj;
    const since = new Date().toISOString();
    await apply(`apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: web, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081, replicas: 1 }
  limiter: { replenishRate: 1, burstCapacity: 10 }
`);
    const c = await eventually('Conflict', async () =>
      (await ready())?.['reason'] === 'Conflict' ? ready() : undefined,
    );
    expect(c['status']).toBe('False');
    expect(c['message']).toMatch(/Service web exists and has no controller ownerReference/);
    expect(c['message']).toMatch(/kubectl -n team-o delete/);
    const warning = await eventually('warning', async () =>
      (await events()).find((e) => e['reason'] === 'Conflict'),
    );
    expect(warning['type']).toBe('Warning');

    // Several resyncs later: still untouched, and nothing of the route was written.
    await resyncs(env, operator, 'ratelimitroutes', 2);
    const after = (await kget(env.cluster, ['-n', NS, 'service', 'web'])) as Obj;
    expect(after['metadata']['resourceVersion']).toBe(before['metadata']['resourceVersion']);
    expect(after['metadata']['labels']).toEqual({ app: 'web' });
    expect(after['metadata']['ownerReferences']).toBeUndefined();
    expect(after['spec']['selector']).toEqual({ app: 'web' });
    expect(after['spec']['ports']).toEqual(before['spec']['ports']);
    expect(await kget(env.cluster, ['-n', NS, 'deployment', 'web'])).toBeUndefined();
    expect(await kget(env.cluster, ['-n', NS, 'configmap', 'web-sidecar'])).toBeUndefined();
    const childWrites = operatorWrites(env, since).filter(
      (e) => e.objectRef?.namespace === NS && e.objectRef.resource !== 'ratelimitroutes',
    );
    expect(childWrites).toEqual([]);
  });

  it('deleting the foreign Service lets the route converge: its own Service, Deployment and ConfigMap, Progressing', async () => {
    const r = await env.cluster.kubectl(['-n', NS, 'delete', 'service', 'web']);
    expect(r.code, r.stderr).toBe(0);
    const svc = (await eventually('route Service', () =>
      kget(env.cluster, ['-n', NS, 'service', 'web']),
    )) as Obj;
    const route = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'web'])) as Obj;
    for (const child of [
      svc,
      await kget(env.cluster, ['-n', NS, 'deployment', 'web']),
      await kget(env.cluster, ['-n', NS, 'configmap', 'web-sidecar']),
    ] as Obj[]) {
      expect(child['metadata']['ownerReferences']).toEqual([
        expect.objectContaining({
          kind: 'RateLimitRoute',
          uid: route['metadata']['uid'],
          controller: true,
        }),
      ]);
    }
    expect(svc['spec']['selector']).toEqual({
      'app.kubernetes.io/name': 'portcullis-gateway',
      'app.kubernetes.io/instance': 'web',
    });
    await eventually('Progressing', async () => (await ready())?.['reason'] === 'Progressing');
    expect(operatorForbidden(env)).toEqual([]);
  });
});

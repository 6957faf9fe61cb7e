// spec.targetRef on a real API server, as the chart's ServiceAccount: the sidecar goes into a
// Deployment a team manages with kubectl apply (as a chart would). Server-side apply under the
// operator's own field manager owns only the sidecar container, its volumes, the config hash and
// two pod labels (the one of every sidecar pod, the route's): the team's re-apply keeps the
// sidecar, the operator never reverts the team's fields, and deleting the route removes exactly
// what was added before the finalizer lets it go. The status counts and selects the team's pods.
import { describe, expect, it } from 'vitest';
import {
  RESERVED_ROUTE_NAME_RULE,
  RESERVED_ROUTE_NAMES,
  TARGET_REF_IMMUTABLE_RULE,
} from '../../operator/api/index.ts';
import { eventually, kget, operatorForbidden, resyncs } from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-r';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env, operator } = operatorOnApiServer([NS], 'op-target-ref', {
  PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
});

const team = (image: string) => `apiVersion: apps/v1
kind: Deployment
metadata: { name: web, namespace: ${NS}, labels: { app: web } }
spec:
  replicas: 2
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers: [{ name: app, image: ${image}, ports: [{ name: http, containerPort: 8081 }] }]
      volumes: [{ name: data, emptyDir: {} }]
`;
const route = (deployment: string) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all, namespace: ${NS} }
spec:
  targetRef: { name: ${deployment}, port: 8081 }
  limiter: { replenishRate: 1, burstCapacity: 10 }
`;

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}
const web = async () =>
  (await kget(env.cluster, ['-n', NS, 'deployment', 'web', '--show-managed-fields'])) as Obj;
const names = (items: Obj[] | undefined) => (items ?? []).map((i) => i['name']);
const sidecarFields = (dep: Obj) =>
  dep['metadata']['managedFields']
    .filter((f: Obj) => f['manager'] === 'portcullis-operator-sidecar')
    .map((f: Obj) => JSON.stringify(f['fieldsV1']))
    .join('');

describe('RateLimitRoute with spec.targetRef', () => {
  it('adds the sidecar to the team Deployment owning only its own fields, and points the route Service at it', async () => {
    await apply(team('example/web:1.0'));
    await apply(route('web'));
    const dep = await eventually('sidecar injected', async () => {
      const d = await web();
      return names(d['spec']['template']['spec']['containers']).includes('portcullis-sidecar')
        ? d
        : undefined;
    });
    const pod = dep['spec']['template']['spec'];
    expect(names(pod['containers'])).toEqual(['app', 'portcullis-sidecar']);
    expect(names(pod['volumes'])).toEqual([
      'data',
      'portcullis-sidecar-config',
      'portcullis-sidecar-tmp',
    ]);
    expect(dep['spec']['replicas']).toBe(2);
    expect(dep['metadata']['ownerReferences']).toBeUndefined();
    const owned = sidecarFields(dep);
    expect(owned).toContain('k:{\\"name\\":\\"portcullis-sidecar\\"}');
    expect(owned).toContain('f:portcullis.dev/config-hash');
    expect(owned).not.toContain('k:{\\"name\\":\\"app\\"}');
    expect(owned).not.toContain('f:replicas');
    // The label every sidecar pod carries (the bundled Redis admits, the PodMonitor scrapes by it)
    // and the route's, owned by the sidecar manager; the team's own label stays the team's.
    expect(dep['spec']['template']['metadata']['labels']).toEqual({
      app: 'web',
      'portcullis.dev/sidecar': 'true',
      'portcullis.dev/route': 'all',
    });
    expect(owned).toContain('f:portcullis.dev/sidecar');
    expect(owned).toContain('f:portcullis.dev/route');
    expect(owned).not.toContain('f:app"');

    const rlr = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all'])) as Obj;
    expect(rlr['metadata']['finalizers']).toEqual(['portcullis.dev/injected-sidecar']);
    const svc = (await eventually('route Service', () =>
      kget(env.cluster, ['-n', NS, 'service', 'all']),
    )) as Obj;
    expect(svc['spec']['selector']).toEqual({ app: 'web' });
    expect(svc['spec']['ports'].map((p: Obj) => p['targetPort'])).toEqual([
      'rlr-http',
      'rlr-admin',
    ]);
    expect(await kget(env.cluster, ['-n', NS, 'deployment', 'all'])).toBeUndefined();
  });

  it("status.replicas and status.selector (the scale subresource's paths) are the team Deployment's count and selector, not the gateway labels its pods lack", async () => {
    const pods = {
      observedGeneration: (await web())['metadata']['generation'],
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    };
    const patched = await env.cluster.kubectl([
      '-n',
      NS,
      'patch',
      'deployment',
      'web',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: pods }),
    ]);
    expect(patched.code, patched.stderr).toBe(0);
    const status = await eventually('route status', async () => {
      const got = ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all'])) as Obj)['status'];
      return got?.['replicas'] === 2 ? got : undefined;
    });
    expect(status['selector']).toBe('app=web');
    // The selector finds the team's pods: it is the Deployment's own, and its template carries it.
    const dep = await web();
    expect(dep['spec']['template']['metadata']['labels']).toMatchObject(
      dep['spec']['selector']['matchLabels'],
    );
  });

  it("the team's re-apply keeps the sidecar, and the operator leaves the team's new image alone", async () => {
    await apply(team('example/web:1.1'));
    await resyncs(env, operator, 'ratelimitroutes', 2);
    const dep = await web();
    const containers = dep['spec']['template']['spec']['containers'] as Obj[];
    expect(names(containers)).toEqual(['app', 'portcullis-sidecar']);
    expect(containers[0]?.['image']).toBe('example/web:1.1');
  });

  it('targetRef cannot be renamed (the sidecar would stay behind in the first Deployment)', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: route('other') });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(TARGET_REF_IMMUTABLE_RULE);
  });

  it("a second route on the same Deployment is TargetRefInUse and never rewrites it; deleting it leaves the first route's sidecar", async () => {
    const before = (await web())['metadata']['generation'];
    await apply(route('web').replace('name: all,', 'name: second,'));
    const readyOf = async (name: string) =>
      (
        (((await kget(env.cluster, ['-n', NS, 'ratelimitroute', name])) as Obj | undefined)?.[
          'status'
        ]?.['conditions'] ?? []) as Obj[]
      ).find((c) => c['type'] === 'Ready');
    const c = await eventually('TargetRefInUse', async () =>
      (await readyOf('second'))?.['reason'] === 'TargetRefInUse' ? readyOf('second') : undefined,
    );
    expect(c['message']).toMatch(/already runs the sidecar of RateLimitRoute all/);
    await resyncs(env, operator, 'ratelimitroutes', 2);
    expect((await web())['metadata']['generation']).toBe(before);
    const r = await env.cluster.kubectl(['-n', NS, 'delete', 'ratelimitroute', 'second']);
    expect(r.code, r.stderr).toBe(0);
    const dep = await web();
    expect(names(dep['spec']['template']['spec']['containers'])).toEqual([
      'app',
      'portcullis-sidecar',
    ]);
    expect(dep['metadata']['generation']).toBe(before);
  });

  it("a route named like the auth server's objects is refused by the API server", async () => {
    for (const name of RESERVED_ROUTE_NAMES) {
      const r = await env.cluster.kubectl(['apply', '-f', '-'], {
        input: route('web').replace('name: all,', `name: ${name},`),
      });
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(RESERVED_ROUTE_NAME_RULE);
    }
  });

  it('deleting the route removes exactly the sidecar, its volumes, the hash and the labels; then the route is gone', async () => {
    const r = await env.cluster.kubectl([
      '-n',
      NS,
      'delete',
      'ratelimitroute',
      'all',
      '--wait=false',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'route gone',
      async () => (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all'])) === undefined,
    );
    const dep = await web();
    const pod = dep['spec']['template']['spec'];
    expect(names(pod['containers'])).toEqual(['app']);
    expect(pod['containers'][0]['image']).toBe('example/web:1.1');
    expect(names(pod['volumes'])).toEqual(['data']);
    expect(
      dep['spec']['template']['metadata']['annotations']?.['portcullis.dev/config-hash'],
    ).toBeUndefined();
    expect(dep['spec']['template']['metadata']['labels']).toEqual({ app: 'web' });
    expect(dep['spec']['replicas']).toBe(2);
    expect(sidecarFields(dep)).not.toContain('portcullis-sidecar');
    expect(operatorForbidden(env)).toEqual([]);
  });
});

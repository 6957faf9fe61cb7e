// Routes in front of workloads a team already runs, on the real cluster with a kubelet: one
// RateLimitRoute forwards to an existing Service (spec.upstream: a Deployment of sidecars only),
// another puts the sidecar into an existing Deployment (spec.targetRef). Both limit through the
// route's Service; the team's objects keep their own fields, and deleting the injecting route
// gives the team's pods back without the sidecar.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, Kube } from '../harness/kind/kube.ts';
import { imageOf, type E2eContext } from '../harness/kind/context.ts';
import { deploy, inCluster, namespaceFor, USER_SERVICE } from './support/workloads.ts';
import { bundleEntry } from '../../scripts/bundle.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('workloads');
const limiter = { replenishRate: 1, burstCapacity: 5, requestedTokens: 1 };

/** A team's own Deployment of the user service, as its chart would install it. */
function teamDeployment(c: E2eContext, name: string): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          automountServiceAccountToken: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'app',
              image: imageOf(c, USER_SERVICE),
              imagePullPolicy: 'IfNotPresent',
              command: ['node', bundleEntry('user-service')],
              env: [{ name: 'PORT', value: '8081' }],
              ports: [{ name: 'http', containerPort: 8081 }],
              readinessProbe: {
                httpGet: { path: '/healthcheck/ready', port: 8081 },
                periodSeconds: 2,
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      },
    },
  };
}

const teamService = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web' },
  spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8081 }] },
};
const rlr = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitRoute',
  metadata: { name },
  spec: { ...spec, limiter },
});

interface Burst {
  readonly counts: Record<string, number>;
  readonly elapsedMs: number;
}
const burst = (route: string, userId: string) =>
  inCluster<Burst>(kube, ns, 'burst', {
    url: `http://${route}.${ns}.svc.cluster.local/healthcheck/ready`,
    userId,
    total: 20,
    concurrency: 4,
  });

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions
const containersOf = async (deployment: string): Promise<string[]> =>
  (
    (await kube.json<Obj>(['-n', ns, 'get', 'deployment', deployment]))['spec']['template']['spec'][
      'containers'
    ] as Obj[]
  ).map((c) => String(c['name']));

beforeAll(async () => {
  await kube.createNamespace(ns);
  await kube.apply([teamDeployment(ctx, 'web'), teamService, teamDeployment(ctx, 'app')], ns);
  await kube.rolloutStatus(ns, 'web');
  await kube.rolloutStatus(ns, 'app');
  await deploy(kube, ctx, ns, [
    rlr('via-service', { upstream: { service: { name: 'web', port: 80 }, replicas: 1 } }),
    rlr('injected', { targetRef: { name: 'app', port: 8081 } }),
  ]);
});
afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

describe('routes in front of existing workloads', () => {
  it('spec.upstream: a gateway of sidecars in front of the team Service limits per user, and the team Deployment is not touched', async () => {
    const web = await kube.json<Obj>(['-n', ns, 'get', 'deployment', 'web']);
    const r = await burst('via-service', 'upstream-user');
    // Burst 5 at one token a second: 5 pass, plus one per second the burst took.
    expect(r.counts['200']).toBeGreaterThanOrEqual(5);
    expect(r.counts['200']).toBeLessThanOrEqual(5 + Math.ceil(r.elapsedMs / 1000));
    expect((r.counts['200'] ?? 0) + (r.counts['429'] ?? 0)).toBe(20);
    const after = await kube.json<Obj>(['-n', ns, 'get', 'deployment', 'web']);
    expect(after['metadata']['generation']).toBe(web['metadata']['generation']);
    expect(await containersOf('web')).toEqual(['app']);
  });

  it('spec.targetRef: the sidecar runs inside the team pods and limits per user; deleting the route gives the pods back without it', async () => {
    expect(await containersOf('app')).toEqual(['app', 'portcullis-sidecar']);
    const r = await burst('injected', 'injected-user');
    expect(r.counts['200']).toBeGreaterThanOrEqual(5);
    expect(r.counts['200']).toBeLessThanOrEqual(5 + Math.ceil(r.elapsedMs / 1000));
    expect((r.counts['200'] ?? 0) + (r.counts['429'] ?? 0)).toBe(20);

    await kube.kubectl(['-n', ns, 'delete', 'ratelimitroute', 'injected', '--wait=true'], {
      timeoutMs: 120_000,
    });
    expect(await containersOf('app')).toEqual(['app']);
    await kube.rolloutStatus(ns, 'app');
    await eventually(
      'the team pods run without the sidecar',
      async () => {
        const pods = await kube.json<{ items: Obj[] }>(['-n', ns, 'get', 'pods', '-l', 'app=app']);
        const live = pods.items.filter((p) => p['metadata']['deletionTimestamp'] === undefined);
        return live.length === 1 &&
          live.every(
            (p) => (p['spec']['containers'] as Obj[]).map((c) => c['name']).join() === 'app',
          )
          ? true
          : undefined;
      },
      120_000,
      1000,
    );
  });
});

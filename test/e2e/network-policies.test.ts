// The limiter cannot be walked around, on a cluster whose CNI enforces NetworkPolicies
// (kube-router's firewall offline, kindnetd on stock kind). From a pod of another namespace:
// a targetRef route's app port on the pod IP is refused while its sidecar port and the route's
// Service answer; an upstream route's team Service and pods are refused while the route answers;
// opting the route out opens the app port again (so the refusal was the policy's). A pod that
// copies the sidecar label in a namespace the platform did not admit (the install's
// redis.networkPolicy.namespaceSelector) cannot reach either bundled Redis.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bundleEntry } from '../../scripts/bundle.ts';
import { imageOf, type E2eContext } from '../harness/kind/context.ts';
import { eventually, Kube } from '../harness/kind/kube.ts';
import { repoRoot } from '../harness/programs.ts';
import { clientPod, CLIENT_POD, deploy, namespaceFor, USER_SERVICE } from './support/workloads.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const team = namespaceFor('netpol-team');
const other = namespaceFor('netpol-other');
/** A namespace the platform has not labelled for Portcullis (created without the e2e label). */
const outside = namespaceFor('netpol-outside');
const limiter = { replenishRate: 100, burstCapacity: 100, requestedTokens: 1 };
const APP_PORT = 8081;
const FORGED_LABELS = {
  'portcullis.dev/sidecar': 'true',
  'app.kubernetes.io/name': 'portcullis-auth-server',
  'app.kubernetes.io/managed-by': 'portcullis-operator',
};

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

function teamDeployment(c: E2eContext, name: string): object {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
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
              env: [{ name: 'PORT', value: String(APP_PORT) }],
              ports: [{ name: 'http', containerPort: APP_PORT }],
              readinessProbe: {
                httpGet: { path: '/healthcheck/ready', port: APP_PORT },
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
const rlr = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitRoute',
  metadata: { name },
  spec: { ...spec, limiter },
});
/** The client pod under another name, carrying the labels of Portcullis' own Redis clients. */
const forger = (name: string) => {
  const pod = clientPod(ctx) as Obj;
  return { ...pod, metadata: { name, labels: FORGED_LABELS } };
};

interface Connection {
  readonly outcome: 'connected' | 'refused' | 'timeout' | 'error';
  readonly status?: number;
}
const CONNECT = readFileSync(
  path.join(repoRoot, 'test', 'e2e', 'in-cluster', 'connect.mjs'),
  'utf8',
);
async function connectFrom(
  namespace: string,
  pod: string,
  host: string,
  port: number,
  httpPath?: string,
): Promise<Connection> {
  const source = `const PARAMS = ${JSON.stringify({ host, port, timeoutMs: 3000, path: httpPath })};\n${CONNECT}`;
  const out = await kube.exec(namespace, pod, ['node', '--input-type=module', '-'], {
    input: source,
    timeoutMs: 30_000,
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '') as Connection;
}
/** Waits for a connection to settle on `want` (policies are programmed a moment after they are written). */
async function settlesOn(
  what: string,
  want: (c: Connection) => boolean,
  attempt: () => Promise<Connection>,
): Promise<Connection> {
  let last: Connection | undefined;
  await eventually(
    what,
    async () => {
      last = await attempt();
      return want(last) ? true : undefined;
    },
    90_000,
    1000,
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; last: ${JSON.stringify(last)}`);
  });
  return last as Connection;
}
const blocked = (c: Connection) => c.outcome !== 'connected';

async function podIp(namespace: string, selector: string, containers: number): Promise<string> {
  return eventually(
    `a ready pod ${selector} with ${containers} containers`,
    async () => {
      const pods = await kube.json<{ items: Obj[] }>([
        '-n',
        namespace,
        'get',
        'pods',
        '-l',
        selector,
      ]);
      const pod = pods.items.find(
        (p) =>
          p['metadata']['deletionTimestamp'] === undefined &&
          (p['spec']['containers'] as Obj[]).length === containers &&
          (p['status']['conditions'] as Obj[] | undefined)?.some(
            (c) => c['type'] === 'Ready' && c['status'] === 'True',
          ),
      );
      return pod?.['status']['podIP'] as string | undefined;
    },
    180_000,
    1000,
  );
}

let appIp = '';
/** The injected sidecar's proxy port in the team's pods (container port rlr-http). */
let sidecarPort = 0;
let webIp = '';
let webClusterIp = '';

beforeAll(async () => {
  await kube.createNamespace(team);
  await kube.apply(
    [
      teamDeployment(ctx, 'app'),
      teamDeployment(ctx, 'web'),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web' },
        spec: {
          selector: { app: 'web' },
          ports: [{ name: 'http', port: 80, targetPort: APP_PORT }],
        },
      },
    ],
    team,
  );
  await deploy(kube, ctx, team, [
    rlr('injected', { targetRef: { name: 'app', port: APP_PORT } }),
    rlr('via-service', { upstream: { service: { name: 'web', port: 80 }, replicas: 1 } }),
  ]);
  await kube.rolloutStatus(team, 'app');
  await deploy(kube, ctx, other, [forger('labelled')]);
  await kube.apply([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: outside } }]);
  await kube.apply([forger('forger')], outside);
  await kube.wait(other, ['pod', 'labelled'], 'condition=Ready', 180);
  await kube.wait(outside, ['pod', 'forger'], 'condition=Ready', 180);
  appIp = await podIp(team, 'app=app', 2);
  const injected = (await kube.json<Obj>(['-n', team, 'get', 'deployment', 'app']))['spec'][
    'template'
  ]['spec']['containers'] as Obj[];
  sidecarPort =
    (injected.flatMap((c) => (c['ports'] ?? []) as Obj[]).find((p) => p['name'] === 'rlr-http')?.[
      'containerPort'
    ] as number | undefined) ?? 0;
  webIp = await podIp(team, 'app=web', 1);
  webClusterIp = (await kube.json<Obj>(['-n', team, 'get', 'service', 'web']))['spec'][
    'clusterIP'
  ] as string;
}, 600_000);
afterAll(async () => {
  await kube.close();
  for (const ns of [team, other, outside]) await kube.deleteNamespace(ns);
});

describe(`NetworkPolicies, enforced by ${ctx.networkPolicyEnforcer}`, () => {
  it("targetRef: another namespace's pod reaches the route and the sidecar port, never the app's own port on the pod IP", async () => {
    expect(
      await connectFrom(
        other,
        CLIENT_POD,
        `injected.${team}.svc.cluster.local`,
        80,
        '/healthcheck/ready',
      ),
    ).toEqual({ outcome: 'connected', status: 200 });
    expect(sidecarPort).not.toBe(APP_PORT);
    expect(await connectFrom(other, CLIENT_POD, appIp, sidecarPort, '/healthcheck/ready')).toEqual({
      outcome: 'connected',
      status: 200,
    });
    await settlesOn('the app port refused', blocked, () =>
      connectFrom(other, CLIENT_POD, appIp, APP_PORT),
    );
    // Same namespace too: the policy admits any source on the sidecar ports only.
    await settlesOn('the app port refused within the namespace', blocked, () =>
      connectFrom(team, CLIENT_POD, appIp, APP_PORT),
    );
  });

  it("upstream: the team Service and its pods admit only the route's gateway; the route answers", async () => {
    expect(
      await connectFrom(
        other,
        CLIENT_POD,
        `via-service.${team}.svc.cluster.local`,
        80,
        '/healthcheck/ready',
      ),
    ).toEqual({ outcome: 'connected', status: 200 });
    await settlesOn('the upstream Service refused', blocked, () =>
      connectFrom(other, CLIENT_POD, webClusterIp, 80),
    );
    await settlesOn('the upstream pod refused', blocked, () =>
      connectFrom(team, CLIENT_POD, webIp, APP_PORT),
    );
  });

  it('spec.networkPolicy.enabled=false opens the app port again: the refusal was the policy', async () => {
    await kube.kubectl([
      '-n',
      team,
      'patch',
      'ratelimitroute',
      'injected',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { networkPolicy: { enabled: false } } }),
    ]);
    const open = await settlesOn(
      'the app port answers',
      (c) => c.outcome === 'connected',
      () => connectFrom(other, CLIENT_POD, appIp, APP_PORT, '/healthcheck/ready'),
    );
    expect(open.status).toBe(200);
  });

  it("a pod copying the Redis clients' labels in a namespace the platform did not admit reaches neither Redis; the namespace decides", async () => {
    const ns = ctx.releaseNamespace;
    for (const redis of ['redis', 'auth-redis']) {
      const host = `${ctx.release}-${redis}.${ns}.svc.cluster.local`;
      const forged = await connectFrom(outside, 'forger', host, 6379);
      expect(forged.outcome, `${redis} from ${outside}`).not.toBe('connected');
      // The same labels in an admitted namespace connect: only the namespace (which a tenant
      // cannot label) tells them apart there; the Redis password is what guards beyond it.
      expect(await connectFrom(other, 'labelled', host, 6379), `${redis} from ${other}`).toEqual({
        outcome: 'connected',
      });
    }
  });
});

// A RateLimitPolicy on the real cluster, with traffic through a real gateway: Gateway API's
// standard-channel CRDs (from the sigs.k8s.io/gateway-api module), a Gateway and an HTTPRoute of
// the team's, and the policy targeting the route's rule. No Gateway API data plane builds here,
// so the platform's gateway is Caddy (built from its Go module) deployed in the cluster and wired
// by hand to the policy's decision Service with forward_auth, as docs/concepts/gateway.md shows for
// an HTTPRoute CRD without the ExternalAuth filter. The specification's scenario goes through
// Caddy from a client pod; deleting the policy takes the decision service away and the limit with it.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, Kube, KubectlError } from '../harness/kind/kube.ts';
import { backend, CADDY, caddyObjects, gatewayRoute } from './support/caddy-gateway.ts';
import { deploy, inCluster, namespaceFor } from './support/workloads.ts';
import { SPEC_RULE, specScenario } from './support/scenario.ts';
import { gatewayApiCrdFiles } from '../harness/k8s/gateway-api.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('policy');
const rule = SPEC_RULE;
const POLICY = 'orders';
const DECISION = `${POLICY}-decision`;
const gateway = `http://${CADDY}.${ns}.svc.cluster.local`;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const policy = {
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitPolicy',
  metadata: { name: POLICY },
  spec: {
    targetRefs: [
      { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', name: 'shop', sectionName: 'api' },
    ],
    limiter: rule,
  },
};

/** Gateway API's standard channel, as a platform installs it: HTTPRoute there has no ExternalAuth filter. */
async function installGatewayApi(): Promise<void> {
  for (const file of gatewayApiCrdFiles('standard'))
    await kube.kubectl(['apply', '--server-side', '-f', file]);
  // kubectl wait fails outright on a CRD whose status has no conditions yet: ask until Established.
  await eventually(
    'Gateway API CRDs established',
    () =>
      kube
        .kubectl([
          'wait',
          '--for=condition=Established',
          '--timeout=10s',
          'crd/httproutes.gateway.networking.k8s.io',
          'crd/gateways.gateway.networking.k8s.io',
        ])
        .then(
          () => true,
          () => false,
        ),
    60_000,
  );
}

const get = (kind: string, name: string): Promise<Obj | undefined> =>
  kube.json<Obj>(['-n', ns, 'get', kind, name]).catch((err: unknown) => {
    if (err instanceof KubectlError && /NotFound/.test(err.message)) return undefined;
    throw err;
  });

beforeAll(async () => {
  await installGatewayApi();
  await deploy(kube, ctx, ns, [
    ...backend(ctx, 'shop-backend'),
    ...gatewayRoute('edge', 'shop', 'api', 'shop-backend'),
    policy,
    ...caddyObjects(
      ctx,
      `${DECISION}.${ns}.svc.cluster.local:80`,
      `shop-backend.${ns}.svc.cluster.local:80`,
    ),
  ]);
  await eventually(
    'the decision Deployment exists',
    () => get('deployment', DECISION),
    120_000,
    500,
  );
  for (const d of ['shop-backend', DECISION, CADDY]) await kube.rolloutStatus(ns, d, 240);
}, 600_000);

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

const condition = (p: Obj | undefined, type: string): Obj | undefined =>
  p?.['status']?.['ancestors']?.[0]?.['conditions']?.find((c: Obj) => c['type'] === type);

describe('RateLimitPolicy on an HTTPRoute, traffic through Caddy in the cluster', () => {
  it("the policy is Accepted on the route's Gateway; the standard channel has no ExternalAuth filter, so Wired says to wire by hand and the route is left as written", async () => {
    const p = await eventually(
      'the policy has status.ancestors',
      async () => {
        const live = await get('ratelimitpolicy', POLICY);
        return live?.['status']?.['ancestors']?.length > 0 ? live : undefined;
      },
      60_000,
      500,
    );
    expect(p?.['status']['ancestors'][0]).toMatchObject({
      ancestorRef: {
        group: 'gateway.networking.k8s.io',
        kind: 'Gateway',
        name: 'edge',
        namespace: ns,
      },
      controllerName: 'portcullis.dev/operator',
    });
    expect(condition(p, 'Accepted')).toMatchObject({ status: 'True', reason: 'Accepted' });
    expect(condition(p, 'portcullis.dev/Wired')).toMatchObject({
      status: 'False',
      reason: 'ExternalAuthUnsupported',
    });
    const route = await get('httproute', 'shop');
    expect(route?.['spec']['rules'][0]['filters'] ?? []).toEqual([]);
    for (const kind of ['service', 'configmap', 'poddisruptionbudget', 'networkpolicy']) {
      const name = kind === 'configmap' ? `${DECISION}-sidecar` : DECISION;
      const obj = await get(kind, name);
      expect(obj?.['metadata']['ownerReferences']?.[0], `${kind} ${name}`).toMatchObject({
        kind: 'RateLimitPolicy',
        name: POLICY,
        controller: true,
      });
    }
  });

  it("the specification's scenario through Caddy: 30 GETs 0.5 s apart give the exact bucket's 12 from the service with RateLimit headers, and 18 x 429 with Retry-After, RateLimit headers and problem+json", async () => {
    const { ok, limited } = await specScenario(kube, ns, `${gateway}/healthcheck/ready`);
    for (const r of ok) {
      expect(r.headers['ratelimit-policy']).toMatch(/^"default";q=10;w=\d+$/);
      expect(r.headers['ratelimit']).toMatch(/^"default";r=\d+;t=\d+$/);
    }
    for (const r of limited) {
      expect(JSON.parse(r.body)).toMatchObject({ status: 429 });
      expect(r.headers['ratelimit-policy']).toMatch(/^"default";q=10;w=\d+$/);
      // Refused with fewer tokens left than a request costs (2): 0 or 1.
      expect(r.headers['ratelimit']).toMatch(/^"default";r=[01];t=\d+$/);
    }
  });

  it("a request without USER-ID gets the limiter's 400 problem+json through Caddy, and never reaches the service", async () => {
    const out = await kube.exec(ns, 'client', [
      'node',
      '-e',
      `fetch(${JSON.stringify(`${gateway}/healthcheck/ready`)}).then(async (r) => console.log(JSON.stringify({ status: r.status, type: r.headers.get('content-type'), body: await r.json() })))`,
    ]);
    const res = JSON.parse(out) as {
      status: number;
      type: string;
      body: { status: number; type: string };
    };
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 400, type: 'urn:portcullis:problem:invalid-user-id' });
  });

  it('deleting the policy removes its decision service and lifts the limit at the gateway', async () => {
    const burst = (userId: string) =>
      inCluster<{ counts: Record<string, number>; elapsedMs: number }>(kube, ns, 'burst', {
        url: `${gateway}/healthcheck/ready`,
        userId,
        total: 12,
        concurrency: 1,
      });
    // With the policy: a burst of 12 gets the bucket's 5 (10 tokens, 2 each), and one more per 2 s it lasts.
    const before = await burst('before-delete');
    expect(before.counts['200']).toBeGreaterThanOrEqual(5);
    expect(before.counts['200']).toBeLessThanOrEqual(
      Math.floor((10 + before.elapsedMs / 1000) / 2),
    );
    expect(before.counts['429']).toBeGreaterThanOrEqual(1);
    expect((before.counts['200'] ?? 0) + (before.counts['429'] ?? 0)).toBe(12);

    await kube.kubectl(['-n', ns, 'delete', 'ratelimitpolicy', POLICY, '--timeout=120s']);
    for (const kind of [
      'deployment',
      'service',
      'configmap',
      'poddisruptionbudget',
      'networkpolicy',
    ]) {
      const name = kind === 'configmap' ? `${DECISION}-sidecar` : DECISION;
      await eventually(
        `${kind} ${name} deleted with the policy`,
        async () => (await get(kind, name)) === undefined,
        120_000,
        500,
      );
    }
    const after = await eventually(
      'every request of a burst admitted through Caddy',
      async () => {
        const b = await burst('after-delete');
        return b.counts['200'] === 12 ? b : undefined;
      },
      60_000,
      1000,
    );
    expect(after.counts).toEqual({ 200: 12 });
  });
});

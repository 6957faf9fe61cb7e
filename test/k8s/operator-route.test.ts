// A RateLimitRoute against a real kube-apiserver, reconciled by the
// operator process running as the chart's ServiceAccount with exactly the chart's RBAC.
// No kube-controller-manager runs here: this test plays the Deployment controller by writing
// Deployment status itself, and asserts ownerReferences instead of garbage collection.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseSidecarConfigText } from '../../lib/config/sidecar.ts';
import {
  eventually,
  kget,
  metricValue,
  operatorForbidden,
  operatorIdle,
  operatorWrites,
  resyncs,
} from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-a';

const route = (replenishRate: number) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all, namespace: ${NS} }
spec:
  target:
    image: portcullis/user-service:test
    command: [node, services/user-service/main.ts]
    port: 8081
    replicas: 2
    env: [{ name: PORT, value: "8081" }]
  path: /**
  limiter: { replenishRate: ${replenishRate}, burstCapacity: 10, requestedTokens: 2 }
`;

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env, operator } = operatorOnApiServer([NS], 'op-route', {
  PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
});

async function apply(yaml: string) {
  const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: yaml });
  expect(r.code, r.stderr).toBe(0);
}

async function ready(): Promise<Obj | undefined> {
  const r = await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all']);
  return (r?.['status'] as Obj | undefined)?.['conditions']?.find(
    (c: Obj) => c['type'] === 'Ready',
  );
}

/** Plays the Deployment controller: all pods of the current generation updated and ready. */
async function markRolledOut(replicas: number) {
  const dep = (await kget(env.cluster, ['-n', NS, 'deployment', 'all'])) as Obj;
  const status = {
    observedGeneration: dep['metadata']['generation'],
    replicas,
    updatedReplicas: replicas,
    readyReplicas: replicas,
    availableReplicas: replicas,
  };
  const r = await env.cluster.kubectl([
    '-n',
    NS,
    'patch',
    'deployment',
    'all',
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
  expect(r.code, r.stderr).toBe(0);
}

describe('operator: RateLimitRoute on a real API server, as the chart ServiceAccount', () => {
  it('creates exactly the expected children, each with an ownerReference to the route', async () => {
    await apply(route(1));
    const owner = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all'])) as Obj;
    await eventually(
      'children',
      async () => (await kget(env.cluster, ['-n', NS, 'service', 'all'])) !== undefined,
    );
    const list = async (kind: string) =>
      ((await kget(env.cluster, ['-n', NS, kind, '-l', 'portcullis.dev/route=all'])) as Obj)[
        'items'
      ].map((i: Obj) => i['metadata']);
    await eventually(
      'budget',
      async () => (await kget(env.cluster, ['-n', NS, 'poddisruptionbudget', 'all'])) !== undefined,
    );
    const kinds = [
      'configmaps',
      'deployments',
      'services',
      'secrets',
      'networkpolicies',
      'poddisruptionbudgets',
    ];
    const children = (await Promise.all(kinds.map(list))).flat();
    expect(children.map((m: Obj) => m['name']).sort()).toEqual([
      'all',
      'all',
      'all',
      'all',
      'all-sidecar',
    ]);
    for (const m of children) {
      expect(m['ownerReferences']).toEqual([
        {
          apiVersion: 'portcullis.dev/v1alpha1',
          kind: 'RateLimitRoute',
          name: 'all',
          uid: owner['metadata']['uid'],
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
    const dep = (await kget(env.cluster, [
      '-n',
      NS,
      'deployment',
      'all',
      '--show-managed-fields',
    ])) as Obj;
    expect(
      dep['metadata']['managedFields'].map((f: Obj) => `${f['manager']}/${f['operation']}`),
    ).toContain('portcullis-route/Apply'); // the route controller's own field manager;
    const containers = dep['spec']['template']['spec']['containers'];
    expect(containers.map((c: Obj) => c['name'])).toEqual(['target', 'sidecar']);
    expect(containers[1]['command']).toEqual(['node', 'dist/sidecar/main.mjs']);
    // The Service: http to the sidecar's proxy and metrics to its admin port (for a ServiceMonitor), by container port name.
    const svc = (await kget(env.cluster, ['-n', NS, 'service', 'all'])) as Obj;
    expect(svc['spec']['ports'].map((p: Obj) => [p['name'], p['port'], p['targetPort']])).toEqual([
      ['http', 80, 'http'],
      ['metrics', 9090, 'admin'],
    ]);
    expect(containers[1]['ports'].map((p: Obj) => p['name'])).toEqual(['http', 'admin']);
  });

  it('status: observedGeneration and Ready=False Progressing until the pods are ready, then Ready=True with readyReplicas', async () => {
    const c = await eventually('Progressing', async () => {
      const r = await ready();
      return r?.['reason'] === 'Progressing' ? r : undefined;
    });
    expect(c).toMatchObject({ status: 'False', observedGeneration: 1 });
    expect(c['message']).toMatch(/Deployment all/);
    await markRolledOut(2);
    await eventually('Ready', async () => (await ready())?.['status'] === 'True');
    const r = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'all'])) as Obj;
    expect(r['status']).toMatchObject({ observedGeneration: 1, readyReplicas: 2, service: 'all' });
    const events = await env.cluster.kubectl([
      '-n',
      NS,
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=all,involvedObject.kind=RateLimitRoute',
      '-o',
      'json',
    ]);
    expect(JSON.parse(events.stdout)['items'].map((e: Obj) => e['reason'])).toContain('Applied');
  });

  it('a no-op resync makes zero write requests (counted in the API server audit log)', async () => {
    await operatorIdle(operator); // the status write of the last step has landed
    const since = new Date().toISOString();
    const reconcilesBefore = metricValue(
      await operator.metrics(),
      'portcullis_operator_reconcile_total',
      { controller: 'ratelimitroute' },
    );
    await resyncs(env, operator, 'ratelimitroutes', 3);
    const reconcilesAfter = metricValue(
      await operator.metrics(),
      'portcullis_operator_reconcile_total',
      { controller: 'ratelimitroute' },
    );
    expect(reconcilesAfter - reconcilesBefore).toBeGreaterThanOrEqual(3);
    expect(operatorWrites(env, since)).toEqual([]);
  });

  it('a spec change rolls through: new ConfigMap, new pod template, observedGeneration 2', async () => {
    const before = (await kget(env.cluster, ['-n', NS, 'deployment', 'all'])) as Obj;
    const hash =
      before['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'];
    await apply(route(5));
    await eventually('new config', async () => {
      const cm = (await kget(env.cluster, ['-n', NS, 'configmap', 'all-sidecar'])) as Obj;
      return /replenishRate: 5/.test(cm['data']['config.yaml']);
    });
    const after = (await eventually('new template', async () => {
      const d = (await kget(env.cluster, ['-n', NS, 'deployment', 'all'])) as Obj;
      return d['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'] !== hash
        ? d
        : undefined;
    })) as Obj;
    expect(after['metadata']['generation']).toBeGreaterThan(before['metadata']['generation']);
    await eventually(
      'observedGeneration 2',
      async () => (await ready())?.['observedGeneration'] === 2,
    );
    expect((await ready())?.['reason']).toBe('Progressing'); // the new template is not rolled out yet
    await markRolledOut(2);
    await eventually('Ready again', async () => (await ready())?.['status'] === 'True');
  });

  it('a deleted child is recreated', async () => {
    const r = await env.cluster.kubectl(['-n', NS, 'delete', 'service', 'all']);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'service back',
      async () => (await kget(env.cluster, ['-n', NS, 'service', 'all'])) !== undefined,
    );
    const cm = await env.cluster.kubectl(['-n', NS, 'delete', 'configmap', 'all-sidecar']);
    expect(cm.code, cm.stderr).toBe(0);
    await eventually(
      'configmap back',
      async () => (await kget(env.cluster, ['-n', NS, 'configmap', 'all-sidecar'])) !== undefined,
    );
  });

  it('a hand-edited field of a child is put back', async () => {
    const r = await env.cluster.kubectl([
      '-n',
      NS,
      'patch',
      'deployment',
      'all',
      '--type=merge',
      '-p',
      '{"spec":{"replicas":7}}',
    ]);
    expect(r.code, r.stderr).toBe(0);
    await eventually(
      'replicas back to 2',
      async () =>
        ((await kget(env.cluster, ['-n', NS, 'deployment', 'all'])) as Obj)['spec']['replicas'] ===
        2,
    );
    const c = await env.cluster.kubectl([
      '-n',
      NS,
      'patch',
      'configmap',
      'all-sidecar',
      '--type=merge',
      '-p',
      '{"data":{"config.yaml":"tampered: true"}}',
    ]);
    expect(c.code, c.stderr).toBe(0);
    await eventually('config back', async () =>
      /replenishRate: 5/.test(
        ((await kget(env.cluster, ['-n', NS, 'configmap', 'all-sidecar'])) as Obj)['data'][
          'config.yaml'
        ],
      ),
    );
  });

  it('an invalid spec the CRD lets through is reported, not crashed on', async () => {
    // The CRD and the operator check the same rules (spec.redis.secretRef, once refused here, is
    // supported now), so play an older CRD (version skew): drop the CEL rule requestedTokens <=
    // burstCapacity, create a route breaking it, then put the CRD back.
    const rule =
      '/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/limiter/x-kubernetes-validations';
    const p = await env.cluster.kubectl([
      'patch',
      'crd',
      'ratelimitroutes.portcullis.dev',
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'remove', path: rule }]),
    ]);
    expect(p.code, p.stderr).toBe(0);
    try {
      const bad = `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: bad, namespace: ${NS} }
spec:
  target: { image: x, port: 8081 }
  limiter: { replenishRate: 1, burstCapacity: 1, requestedTokens: 2 }
`;
      await eventually(
        'the API server without the rule',
        async () => (await env.cluster.kubectl(['apply', '-f', '-'], { input: bad })).code === 0,
      );
      const c = await eventually('InvalidSpec', async () => {
        const r = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'bad'])) as Obj;
        return r['status']?.['conditions']?.find((x: Obj) => x['reason'] === 'InvalidSpec');
      });
      expect(c['message']).toMatch(/requestedTokens/);
      expect(await kget(env.cluster, ['-n', NS, 'deployment', 'bad'])).toBeUndefined();
    } finally {
      const r = await env.cluster.kubectl([
        'apply',
        '--server-side',
        '--force-conflicts',
        '-f',
        'crds/portcullis.dev_ratelimitroutes.yaml',
      ]);
      expect(r.code, r.stderr).toBe(0);
    }
  });

  it('a rules + jwt route: the ConfigMap holds the rules in order and the namespace auth server as the issuer', async () => {
    await apply(`apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: api, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081 }
  limiter:
    rules:
      - name: writes
        path: /api/**
        methods: [POST, PUT]
        limits: [{ replenishRate: 1, burstCapacity: 5, requestedTokens: 2 }, { replenishRate: 10, burstCapacity: 600 }]
      - name: reads
        methods: [GET]
        limits: [{ replenishRate: 20, burstCapacity: 100 }]
        enforce: true
    unmatched: refuse
    enforce: false
    key: { source: jwt }
    keyHeader: X-User
`);
    const text = (await eventually(
      'api-sidecar ConfigMap',
      async () =>
        ((await kget(env.cluster, ['-n', NS, 'configmap', 'api-sidecar'])) as Obj | undefined)?.[
          'data'
        ]?.['config.yaml'],
    )) as string;
    expect(parse(text).limiter).toEqual({
      rules: [
        {
          name: 'writes',
          path: '/api/**',
          methods: ['POST', 'PUT'],
          limits: [
            { replenishRate: 1, burstCapacity: 5, requestedTokens: 2 },
            { replenishRate: 10, burstCapacity: 600 },
          ],
        },
        {
          name: 'reads',
          path: '/**',
          methods: ['GET'],
          limits: [{ replenishRate: 20, burstCapacity: 100 }],
          enforce: true,
        },
      ],
      unmatched: 'refuse',
      enforce: false,
      key: 'jwt',
      keyHeader: 'X-User',
      jwt: {
        issuer: `http://portcullis-auth-server.${NS}.svc`,
        audience: 'urn:portcullis:user-service',
        jwksUrl: `http://portcullis-auth-server.${NS}.svc/jwks.json`,
      },
      onMissingKey: { status: 400 },
      onStoreError: 'allow',
    });
    expect(parseSidecarConfigText(text).limiter.jwt?.claim).toBe('sub'); // the sidecar accepts it and fills in the claim
    await eventually('api Progressing', async () => {
      const r = (await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'api'])) as Obj;
      return r['status']?.['conditions']?.find((c: Obj) => c['reason'] === 'Progressing');
    });
  });

  it('everything above ran with the chart RBAC: no request of the operator was forbidden', () => {
    expect(operatorForbidden(env)).toEqual([]);
    expect(operator.program.lines.filter((l) => /forbidden/i.test(l))).toEqual([]);
  });
});

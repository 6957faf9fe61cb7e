// The RateLimitRoute scale subresource on a real API server, as the chart's ServiceAccount: a
// PATCH of /scale (what kubectl scale rlr and an HorizontalPodAutoscaler on the route send)
// changes the route and so the Deployment's replicas; /scale reports the pods and their selector.
// A route that omits spec.target.replicas leaves the Deployment's count to another field manager:
// what it sets survives reconciles, including one that re-applies the Deployment.
import { describe, expect, it } from 'vitest';
import { FIELD_MANAGERS } from '../../operator/app.ts';
import { eventually, kget, operatorForbidden, resyncs } from '../harness/k8s/operator-env.ts';
import { operatorOnApiServer } from './operator-fixture.ts';

const NS = 'team-h';
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const { env, operator } = operatorOnApiServer([NS], 'op-scale', {
  PORTCULLIS_RESYNC_INTERVAL_MS: '2000',
});

const route = (name: string, replicas: string, rate = 1) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081${replicas} }
  limiter: { replenishRate: ${rate}, burstCapacity: 10 }
`;

async function kubectl(args: string[], input?: string): Promise<string> {
  const r = await env.cluster.kubectl(args, input === undefined ? undefined : { input });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}
const deployment = async (name: string) =>
  (await kget(env.cluster, ['-n', NS, 'deployment', name, '--show-managed-fields'])) as
    Obj | undefined;
const scale = async (name: string) =>
  JSON.parse(
    await kubectl([
      'get',
      '--raw',
      `/apis/portcullis.dev/v1alpha1/namespaces/${NS}/ratelimitroutes/${name}/scale`,
    ]),
  ) as Obj;

/** Plays the Deployment controller (no kube-controller-manager here): `pods` pods, all ready. */
async function markRolledOut(name: string, pods: number) {
  const dep = (await deployment(name)) as Obj;
  const status = {
    observedGeneration: dep['metadata']['generation'],
    replicas: pods,
    updatedReplicas: pods,
    readyReplicas: pods,
    availableReplicas: pods,
  };
  await kubectl([
    '-n',
    NS,
    'patch',
    'deployment',
    name,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({ status }),
  ]);
}

describe('RateLimitRoute /scale', () => {
  it('a PATCH of the scale subresource changes the route and the Deployment replicas; /scale reports pods and selector', async () => {
    await kubectl(['apply', '-f', '-'], route('scaled', ', replicas: 2'));
    await eventually(
      'deployment at 2',
      async () => (await deployment('scaled'))?.['spec']['replicas'] === 2,
    );

    await kubectl([
      '-n',
      NS,
      'patch',
      'ratelimitroute',
      'scaled',
      '--subresource=scale',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { replicas: 3 } }),
    ]);
    expect(
      ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'scaled'])) as Obj)['spec']['target'][
        'replicas'
      ],
    ).toBe(3);
    await eventually(
      'deployment at 3',
      async () => (await deployment('scaled'))?.['spec']['replicas'] === 3,
    );

    await markRolledOut('scaled', 3);
    const s = await eventually('scale status', async () => {
      const got = await scale('scaled');
      return got['status']?.['replicas'] === 3 ? got : undefined;
    });
    expect(s['spec']).toEqual({ replicas: 3 });
    expect(s['status']['selector']).toBe(
      'app.kubernetes.io/instance=scaled,app.kubernetes.io/name=portcullis-gateway',
    );
    // The selector the scale subresource reports finds exactly the Deployment's pods' labels.
    const dep = (await deployment('scaled')) as Obj;
    expect(s['status']['selector']).toBe(
      Object.entries(dep['spec']['selector']['matchLabels'] as Record<string, string>)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    );
  });

  it('replicas omitted: the operator does not own Deployment.spec.replicas, and a count set by another field manager survives a re-applying reconcile', async () => {
    await kubectl(['apply', '-f', '-'], route('auto', ''));
    const first = (await eventually('deployment', () => deployment('auto'))) as Obj;
    expect(first['spec']['replicas']).toBe(1); // the API server's default
    const operatorFields = (dep: Obj) =>
      JSON.stringify(
        dep['metadata']['managedFields']
          .filter((f: Obj) => f['manager'] === FIELD_MANAGERS.route && f['operation'] === 'Apply')
          .map((f: Obj) => f['fieldsV1']),
      );
    expect(operatorFields(first)).toContain('f:template');
    expect(operatorFields(first)).not.toContain('f:replicas');

    // An autoscaler of the Deployment (here kubectl, its own field manager) picks 4.
    await kubectl(['-n', NS, 'scale', 'deployment', 'auto', '--replicas=4']);
    const hash = first['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'];
    // A spec change makes the operator apply the Deployment again (a new config hash rolls the pods).
    await kubectl(['apply', '-f', '-'], route('auto', '', 5));
    const rolled = (await eventually('re-applied', async () => {
      const dep = await deployment('auto');
      return dep?.['spec']['template']['metadata']['annotations']['portcullis.dev/config-hash'] !==
        hash
        ? dep
        : undefined;
    })) as Obj;
    expect(rolled['spec']['replicas']).toBe(4);
    await resyncs(env, operator, 'ratelimitroutes', 2);
    expect(((await deployment('auto')) as Obj)['spec']['replicas']).toBe(4);

    await markRolledOut('auto', 4);
    const ready = async () =>
      (
        ((await kget(env.cluster, ['-n', NS, 'ratelimitroute', 'auto'])) as Obj)['status'][
          'conditions'
        ] ?? []
      ).find((c: Obj) => c['type'] === 'Ready');
    const c = await eventually('Ready', async () =>
      (await ready())?.['status'] === 'True' ? ready() : undefined,
    );
    expect(c['message']).toMatch(/all 4 pods/);
    expect(operatorForbidden(env)).toEqual([]);
  });
});

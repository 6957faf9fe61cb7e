// The informers' restart policy against a real failure: the API server goes away (every watch
// breaks, lists fail with connection errors, not 410) and comes back. The operator must restart
// its list/watch with backoff, relist, and reconcile what changed while it was blind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  metricValue,
  operatorIdle,
  operatorWrites,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-r';
let env: OperatorEnv;
let operator: RunningOperator;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const route = (rate: number) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: all, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081 }
  limiter: { replenishRate: ${rate}, burstCapacity: 10, requestedTokens: 2 }
`;

beforeAll(async () => {
  env = await startOperatorEnv([NS]);
  // Without leader election: an outage longer than the renew deadline rightly makes a leader exit
  // (it can no longer prove it leads); what is tested here is the informers' recovery. On this
  // machine a kube-apiserver restart takes 10-25 s until RBAC answers again.
  operator = await startOperator(env, 'op-restart', { PORTCULLIS_LEADER_ELECTION: 'false' });
  await eventually('leading', async () => /leader/.test(await operator.readyz()));
});
afterAll(async () => {
  await operator?.program.stop();
  await env?.stop();
});

describe('operator: the API server restarts', () => {
  it('informers restart with backoff, relist, and the operator reconciles what changed meanwhile', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: route(1) });
    expect(r.code, r.stderr).toBe(0);
    await eventually('children', () => kget(env.cluster, ['-n', NS, 'service', 'all']));
    const restartsBefore = metricValue(
      await operator.metrics(),
      'portcullis_operator_informer_restarts_total',
    );

    await env.cluster.stopApiServer();
    await eventually(
      'the informers restart on the lost API server',
      async () =>
        metricValue(await operator.metrics(), 'portcullis_operator_informer_restarts_total') >
        restartsBefore,
    );
    await env.cluster.startApiServer();
    // Changes the operator could only learn about from a relist or a new watch.
    const d = await env.cluster.kubectl(['-n', NS, 'delete', 'service', 'all']);
    expect(d.code, d.stderr).toBe(0);
    const u = await env.cluster.kubectl(['apply', '-f', '-'], { input: route(4) });
    expect(u.code, u.stderr).toBe(0);

    await eventually(
      'service recreated',
      () => kget(env.cluster, ['-n', NS, 'service', 'all']),
      60_000,
    );
    await eventually(
      'new config',
      async () =>
        /replenishRate: 4/.test(
          ((await kget(env.cluster, ['-n', NS, 'configmap', 'all-sidecar'])) as Obj)['data'][
            'config.yaml'
          ],
        ),
      60_000,
    );
    expect(
      metricValue(await operator.metrics(), 'portcullis_operator_informer_restarts_total'),
    ).toBeGreaterThan(restartsBefore);
    expect(operator.program.exited()).toBe(false);
    expect(/leader/.test(await operator.readyz())).toBe(true);
    // and it settles again: no writes once converged
    await operatorIdle(operator);
    const since = new Date().toISOString();
    await operatorIdle(operator);
    expect(operatorWrites(env, since)).toEqual([]);
  });
});

// Two operator processes; only the leader reconciles; after the leader is
// killed (SIGKILL: no lease release) the standby takes over within the lease duration.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  kget,
  LEASE,
  metricValue,
  operatorIdle,
  RELEASE_NS,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-l';
const LEASE_MS = 4000; // FAST timings of operator-env.ts
let env: OperatorEnv;
let a: RunningOperator;
let b: RunningOperator;
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

const route = (name: string) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081 }
  limiter: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 }
`;

/** Straight from the API (no kubectl start-up per poll: the take-over time is measured with it). */
async function holder(): Promise<string | undefined> {
  const res = await env.cluster.request(
    'GET',
    `/apis/coordination.k8s.io/v1/namespaces/${RELEASE_NS}/leases/${LEASE}`,
  );
  return res.status === 200 ? (res.body as Obj)['spec']?.['holderIdentity'] : undefined;
}

const reconciles = async (op: RunningOperator) =>
  metricValue(await op.metrics(), 'portcullis_operator_reconcile_total');

beforeAll(async () => {
  env = await startOperatorEnv([NS]);
  a = await startOperator(env, 'op-a');
  await eventually('a leads', async () => (await holder()) === 'op-a');
  b = await startOperator(env, 'op-b');
  await eventually('b ready (standby)', async () => /standby/.test(await b.readyz()));
});
afterAll(async () => {
  await a?.program.stop();
  await b?.program.stop();
  await env?.stop();
});

describe('operator: leader election on a Lease', () => {
  it('only the leader reconciles', async () => {
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: route('one') });
    expect(r.code, r.stderr).toBe(0);
    await eventually('children of one', () => kget(env.cluster, ['-n', NS, 'deployment', 'one']));
    await operatorIdle(a);
    expect(await reconciles(a)).toBeGreaterThan(0);
    expect(await reconciles(b)).toBe(0);
    expect(metricValue(await a.metrics(), 'portcullis_operator_leader')).toBe(1);
    expect(metricValue(await b.metrics(), 'portcullis_operator_leader')).toBe(0);
    expect(await b.readyz()).toMatch(/standby/);
  });

  it('the standby takes over within the lease duration after the leader is killed, and reconciles', async () => {
    await a.program.stop('SIGKILL');
    const killedAt = Date.now();
    await eventually('b holds the lease', async () => (await holder()) === 'op-b', 30_000, 100);
    const tookMs = Date.now() - killedAt;
    console.info(
      `standby took over ${tookMs} ms after the leader was killed (lease ${LEASE_MS} ms)`,
    );
    // Within the lease duration of the last renewal as the standby saw it: the standby notices a
    // renewal up to one retry period (0.5 s) late and tries again every 0.5 s; 0.5 s more for a
    // busy 2-core machine.
    expect(tookMs).toBeLessThanOrEqual(LEASE_MS + 1500);
    const r = await env.cluster.kubectl(['apply', '-f', '-'], { input: route('two') });
    expect(r.code, r.stderr).toBe(0);
    await eventually('b reconciles', () => kget(env.cluster, ['-n', NS, 'deployment', 'two']));
    expect(await reconciles(b)).toBeGreaterThan(0);
    const lease = (await kget(env.cluster, ['-n', RELEASE_NS, 'lease', LEASE])) as Obj;
    expect(lease['spec']['leaseTransitions']).toBeGreaterThanOrEqual(1);
  });

  it('a graceful stop releases the lease at once', async () => {
    const c = await startOperator(env, 'op-c');
    await eventually('c standby', async () => /standby/.test(await c.readyz()));
    const stoppedAt = Date.now();
    expect(await b.program.stop('SIGTERM')).toBe(0);
    await eventually('c holds the lease', async () => (await holder()) === 'op-c', 30_000, 100);
    expect(Date.now() - stoppedAt).toBeLessThan(LEASE_MS);
    await c.program.stop();
  });
});

// Operator faults on a real kube-apiserver + etcd: the API server restarted
// mid-reconcile, etcd restarted, the operator SIGKILLed mid-reconcile, a burst of conflicting
// updates (409s). After each: everything converges (children with ownerReferences, configs with
// the latest spec, status observedGeneration, every client registered), no OAuth client secret is
// ever regenerated, no child is duplicated, and nothing the operator asked for was forbidden.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCases, recordFaults } from '../harness/reliability-counts.ts';
import {
  auditEvents,
  eventually,
  kget,
  operatorForbidden,
  reconciling,
  startOperator,
  startOperatorEnv,
  type OperatorEnv,
  type RunningOperator,
} from '../harness/k8s/operator-env.ts';

const NS = 'team-faults';
const ROUTES = Array.from({ length: 8 }, (_, i) => `route-${i}`);
const CLIENTS = Array.from({ length: 4 }, (_, i) => `client-${i}`);
const CONVERGE_MS = 150_000;
/** Production-like lease timings (the chart's defaults), a short resync. */
const OPERATOR_ENV = {
  PORTCULLIS_RESYNC_INTERVAL_MS: '5000',
  PORTCULLIS_LEASE_DURATION_MS: '15000',
  PORTCULLIS_RENEW_DEADLINE_MS: '10000',
  PORTCULLIS_RETRY_PERIOD_MS: '2000',
};
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from kubectl, read in assertions

let env: OperatorEnv;
let operator: RunningOperator;
const retired: RunningOperator[] = [];
/** client name -> client_id:client_secret first seen; must never change. */
const firstSecrets = new Map<string, string>();

const routeYaml = (name: string, rate: number) => `apiVersion: portcullis.dev/v1alpha1
kind: RateLimitRoute
metadata: { name: ${name}, namespace: ${NS} }
spec:
  target: { image: portcullis/user-service:test, port: 8081, replicas: 1 }
  path: /**
  limiter: { replenishRate: ${rate}, burstCapacity: 100, requestedTokens: 1 }
`;
const clientYaml = (name: string) => `apiVersion: portcullis.dev/v1alpha1
kind: OAuthClient
metadata: { name: ${name}, namespace: ${NS} }
spec:
  displayName: ${name}
  redirectUris: [https://${name}.example.com/callback]
  scopes: [profile]
`;

const decode = (s: string) => Buffer.from(s, 'base64').toString('utf8');

/**
 * Server-side apply as one field manager per writer (forcing ownership of its fields), retried
 * while the API server is coming back. Stale-resourceVersion writers are separate (kubectl replace).
 */
async function apply(yaml: string, manager = 'faults-test'): Promise<void> {
  let last = '';
  try {
    await eventually(
      'kubectl apply',
      async () => {
        const r = await env.cluster.kubectl(
          ['apply', '--server-side', '--force-conflicts', `--field-manager=${manager}`, '-f', '-'],
          { input: yaml },
        );
        last = r.stderr;
        return r.code === 0;
      },
      60_000,
      500,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}: ${last.slice(0, 500)}`, { cause: err });
  }
}

async function list(kind: string): Promise<Obj[]> {
  const r = await env.cluster.kubectl(['-n', NS, 'get', kind, '-o', 'json']);
  if (r.code !== 0) throw new Error(r.stderr);
  return (JSON.parse(r.stdout) as Obj)['items'] as Obj[];
}

/** Why the last convergence check failed (shown when a test times out). */
let lastReason = '';
const not = (reason: string): undefined => {
  lastReason = reason;
  return undefined;
};

/** Everything the operator should have produced for `rates` (route -> replenishRate) and `clients`. */
async function converged(
  rates: Map<string, number>,
  clients: readonly string[],
): Promise<true | undefined> {
  const [routes, oauth, cms, deps, svcs, secrets] = await Promise.all([
    list('ratelimitroutes'),
    list('oauthclients'),
    list('configmaps'),
    list('deployments'),
    list('services'),
    list('secrets'),
  ]);
  for (const [name, rate] of rates) {
    const r = routes.find((x) => x['metadata']['name'] === name);
    if (r === undefined || r['spec']['limiter']['replenishRate'] !== rate)
      return not(`route ${name}: spec not (yet) at rate ${rate}`);
    if (r['status']?.['observedGeneration'] !== r['metadata']['generation'])
      return not(
        `route ${name}: status.observedGeneration ${r['status']?.['observedGeneration']} != generation ${r['metadata']['generation']}`,
      );
    const uid = r['metadata']['uid'];
    const owned = (items: Obj[]) =>
      items.filter((o) =>
        (o['metadata']['ownerReferences'] ?? []).some(
          (ref: Obj) => ref['uid'] === uid && ref['controller'] === true,
        ),
      );
    const cm = owned(cms);
    if (cm.length !== 1 || owned(deps).length !== 1 || owned(svcs).length !== 1)
      return not(
        `route ${name}: owned children cm ${cm.length} deploy ${owned(deps).length} svc ${owned(svcs).length}`,
      );
    const config = Object.values(cm[0]?.['data'] ?? {}).join('\n');
    if (!new RegExp(`replenishRate: ${rate}\\b`).test(config))
      return not(`route ${name}: config not at rate ${rate}`);
  }
  const registry = secrets.find((s) => s['metadata']['name'] === 'portcullis-auth-clients');
  const registered =
    registry === undefined
      ? []
      : (JSON.parse(decode(registry['data']['clients.json'])) as Obj)['clients'].map(
          (c: Obj) => c['client_id'],
        );
  for (const name of clients) {
    const c = oauth.find((x) => x['metadata']['name'] === name);
    if (c === undefined || c['status']?.['observedGeneration'] !== c['metadata']['generation'])
      return not(
        `client ${name}: status.observedGeneration ${c?.['status']?.['observedGeneration']}`,
      );
    // Controller references only: the shared registry and signing-key Secrets list every client as a plain owner.
    const mine = secrets.filter((s) =>
      (s['metadata']['ownerReferences'] ?? []).some(
        (ref: Obj) => ref['uid'] === c['metadata']['uid'] && ref['controller'] === true,
      ),
    );
    if (mine.length !== 1) return not(`client ${name}: ${mine.length} owned secrets`);
    const id = decode(mine[0]?.['data']['client_id']);
    if (c['status']['clientId'] !== id || !registered.includes(id))
      return not(
        `client ${name}: status.clientId ${c['status']['clientId']} / registered ${registered.includes(id)}`,
      );
  }
  return true;
}

/**
 * Plays the kubelet (restartPolicy: Always): an operator that lost its leader lease exits on
 * purpose (the controller-runtime convention), and a new one is started in its place.
 */
const restarts: string[] = [];
let generation = 1;
async function superviseOperator(): Promise<void> {
  if (!operator.program.exited()) return;
  // The lease-lost line when there is one: warnings the informers log as their connections drop
  // can reach the captured output after it (same millisecond, other writes), so "the last warning"
  // is not the reason. Otherwise the last warning or error, which the test then reports.
  const warnings = operator.program.lines.filter((l) => /"level":(40|50|60)/.test(l));
  const why =
    warnings.find((l) => /leader lease lost: exiting/.test(l)) ??
    warnings.slice(-1)[0] ??
    'no reason logged';
  restarts.push(`${operator.identity}: ${why.slice(0, 200)}`);
  retired.push(operator);
  operator = await startOperator(env, `op-faults-${++generation}`, OPERATOR_ENV);
}

async function converge(
  what: string,
  rates: Map<string, number>,
  clients: readonly string[],
): Promise<void> {
  try {
    await eventually(
      `converged ${what}`,
      async () => {
        await superviseOperator();
        return converged(rates, clients);
      },
      CONVERGE_MS,
      1000,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; last check: ${lastReason}`, { cause: err });
  }
}

/** No child duplicated, no client secret changed since first seen. */
async function assertIntegrity(): Promise<void> {
  const [routes, oauth, cms, deps, svcs, secrets] = await Promise.all([
    list('ratelimitroutes'),
    list('oauthclients'),
    list('configmaps'),
    list('deployments'),
    list('services'),
    list('secrets'),
  ]);
  for (const r of routes) {
    const uid = r['metadata']['uid'];
    for (const [kind, items] of [
      ['ConfigMap', cms],
      ['Deployment', deps],
      ['Service', svcs],
    ] as const) {
      const owned = items.filter((o) =>
        (o['metadata']['ownerReferences'] ?? []).some(
          (ref: Obj) => ref['uid'] === uid && ref['controller'] === true,
        ),
      );
      expect(owned.length, `${kind}s owned by ${r['metadata']['name']}`).toBe(1);
    }
  }
  for (const c of oauth) {
    const owned = secrets.filter((s) =>
      (s['metadata']['ownerReferences'] ?? []).some(
        (ref: Obj) => ref['uid'] === c['metadata']['uid'] && ref['controller'] === true,
      ),
    );
    expect(owned.length, `Secrets owned by ${c['metadata']['name']}`).toBe(1);
    const value = `${decode(owned[0]?.['data']['client_id'])}:${decode(owned[0]?.['data']['client_secret'])}`;
    const name = c['metadata']['name'] as string;
    const first = firstSecrets.get(name);
    if (first === undefined) firstSecrets.set(name, value);
    else expect(value === first, `client secret of ${name} was regenerated`).toBe(true);
  }
  recordCases(
    'operator faults: integrity checks (children counted, secrets compared)',
    routes.length + oauth.length,
  );
}

const operatorConflicts = () =>
  auditEvents(env).filter((e) => e.user.username === env.user && e.responseStatus?.code === 409)
    .length;

beforeAll(async () => {
  env = await startOperatorEnv([NS]);
  operator = await startOperator(env, 'op-faults-1', OPERATOR_ENV);
  await eventually(
    'operator ready',
    async () => (await operator.readyz()).startsWith('ok'),
    60_000,
  );
});
afterAll(async () => {
  await operator?.program.stop();
  for (const o of retired) await o.program.stop();
  await env?.stop();
});

describe('operator under faults on a real API server', () => {
  const rates = new Map<string, number>();
  const clients: string[] = [...CLIENTS];

  it('API server restarted mid-reconcile: converges (an operator that lost its lease exits and is restarted, as a kubelet would)', async () => {
    for (const r of ROUTES) rates.set(r, 5);
    await apply([...ROUTES.map((r) => routeYaml(r, 5)), ...CLIENTS.map(clientYaml)].join('---\n'));
    await reconciling(operator, 'ratelimitroute');
    await env.cluster.restartApiServer();
    recordFaults('kube-apiserver restart mid-reconcile');
    await converge('after the API server restart', rates, clients);
    await assertIntegrity();
    console.log(
      `operator restarts so far (lease lost -> exit, as designed): ${restarts.length}${restarts.length > 0 ? `\n  ${restarts.join('\n  ')}` : ''}`,
    );
  });

  it('etcd restarted during a spec change: converges to the new spec, no secret regenerated', async () => {
    for (const r of ROUTES) rates.set(r, 7);
    await apply(ROUTES.map((r) => routeYaml(r, 7)).join('---\n'));
    await env.cluster.restartEtcd();
    recordFaults('etcd restart mid-reconcile');
    await converge('after the etcd restart', rates, clients);
    await assertIntegrity();
  });

  it('operator SIGKILLed mid-reconcile: a new operator takes over and converges; secrets unchanged; no duplicates', async () => {
    for (const r of ROUTES) rates.set(r, 9);
    clients.push('client-late-0', 'client-late-1');
    await apply(
      [
        ...ROUTES.map((r) => routeYaml(r, 9)),
        clientYaml('client-late-0'),
        clientYaml('client-late-1'),
      ].join('---\n'),
    );
    await reconciling(operator, 'ratelimitroute');
    await operator.program.stop('SIGKILL');
    recordFaults('operator SIGKILL mid-reconcile');
    retired.push(operator);
    operator = await startOperator(env, `op-faults-${++generation}`, OPERATOR_ENV);
    await converge('after the operator was killed', rates, clients);
    await assertIntegrity();
  });

  it('a burst of conflicting updates (409s) and hand edits of children: converges to the last spec', async () => {
    const conflictsBefore = operatorConflicts();
    // Stale-resourceVersion updates from "other controllers": many get 409 Conflict.
    const stale = await Promise.all(
      ROUTES.map((r) => kget(env.cluster, ['-n', NS, 'ratelimitroute', r])),
    );
    let clientConflicts = 0;
    const writes: Promise<void>[] = [];
    for (let round = 0; round < 4; round++) {
      for (const [i] of ROUTES.entries()) {
        const obj = structuredClone(stale[i]) as Obj;
        obj['spec']['limiter']['replenishRate'] = 10 + round;
        delete obj['status'];
        writes.push(
          env.cluster
            .kubectl(['replace', '-f', '-'], { input: JSON.stringify(obj) })
            .then((res) => {
              if (/Conflict|modified/.test(res.stderr)) clientConflicts++;
            }),
        );
      }
      // Meanwhile: quick successive applies (the operator's status writes race them) and hand
      // edits of the children that the operator must put back.
      for (const r of ROUTES) writes.push(apply(routeYaml(r, 20 + round), `racer-${round}`));
      for (const r of ROUTES.slice(0, 3)) {
        writes.push(
          env.cluster
            .kubectl([
              '-n',
              NS,
              'patch',
              'configmap',
              `${r}-sidecar`,
              '--type=merge',
              '-p',
              JSON.stringify({ data: { 'config.yaml': 'tampered: true\n' } }),
            ])
            .then(() => undefined),
        );
        writes.push(
          env.cluster
            .kubectl(['-n', NS, 'scale', 'deployment', r, '--replicas=5'])
            .then(() => undefined),
        );
      }
    }
    await Promise.all(writes);
    recordFaults(
      'conflicting update bursts (stale updates, racing applies, hand edits)',
      writes.length,
    );
    // The last word: one more apply per route.
    for (const r of ROUTES) rates.set(r, 42);
    await apply(ROUTES.map((r) => routeYaml(r, 42)).join('---\n'));
    await converge('after the conflicts', rates, clients);
    // Hand edits were put back.
    for (const r of ROUTES.slice(0, 3)) {
      await eventually(
        `deployment ${r} replicas restored`,
        async () =>
          ((await kget(env.cluster, ['-n', NS, 'deployment', r])) as Obj)['spec']['replicas'] === 1,
        60_000,
        500,
      );
    }
    await assertIntegrity();
    console.log(
      `conflicts: ${clientConflicts} stale client updates refused with 409; the operator met ${operatorConflicts() - conflictsBefore} 409s and retried`,
    );
    expect(clientConflicts).toBeGreaterThan(0);
  });

  it('no request of the operator was forbidden; an operator only ever exited on purpose (SIGKILL, or lease lost)', () => {
    expect(operatorForbidden(env)).toEqual([]);
    expect(operator.program.exited()).toBe(false);
    for (const r of restarts) expect(r).toMatch(/lease/);
    recordCases('operator faults: operator restarts after a lost lease', restarts.length);
    console.log(`operator restarts (lease lost -> exit, as designed): ${restarts.length}`);
  });
});

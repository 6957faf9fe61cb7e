// Helper of the operator's k8s tests (not a test file): a real kube-apiserver with an audit log,
// the CRDs and the chart's ServiceAccount + RBAC installed (rendered by helm), and operator
// processes that authenticate as that ServiceAccount — so every test also proves that the chart's
// RBAC is enough for the operator. Write requests are counted from the API server's audit log,
// independent of the operator's own accounting.
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { startCluster, type Cluster } from './cluster.ts';
import { freePort } from '../ports.ts';
import { startProgram, type Program, type StartOptions } from '../programs.ts';

import { eventually } from '../eventually.ts';

// The k8s tests (and bench/operator.ts) take the one polling helper from here with the rest.
export { eventually };

export const RELEASE_NS = 'portcullis-system';
export const RELEASE = 'portcullis';
export const LEASE = 'portcullis-operator';

export interface OperatorEnv {
  cluster: Cluster;
  /** kubeconfig authenticating as the chart's ServiceAccount. */
  kubeconfig: string;
  /** system:serviceaccount:<ns>:<name> */
  user: string;
  auditLog: string;
  stop(): Promise<void>;
}

export interface AuditEvent {
  auditID?: string;
  stage?: string;
  verb: string;
  user: { username: string };
  objectRef?: {
    resource?: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
  };
  responseStatus?: { code?: number };
  stageTimestamp: string;
  requestReceivedTimestamp: string;
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
`;

/** helmSet: extra `--set` values for the chart (e.g. operator.watchNamespaces={team-a}). */
export async function startOperatorEnv(
  namespaces: readonly string[],
  helmSet: readonly string[] = [],
): Promise<OperatorEnv> {
  const dir = mkdtempSync(path.join(tmpdir(), 'portcullis-audit-'));
  const policy = path.join(dir, 'policy.yaml');
  const auditLog = path.join(dir, 'audit.log');
  writeFileSync(policy, AUDIT_POLICY);
  const cluster = await startCluster({
    apiServerArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${auditLog}`,
      '--audit-log-maxsize=0',
    ],
  });
  try {
    const must = async (
      p: Promise<{ code: number; stdout: string; stderr: string }>,
      what: string,
    ) => {
      const r = await p;
      if (r.code !== 0) throw new Error(`${what} failed: ${r.stderr}`);
      return r.stdout;
    };
    await must(cluster.kubectl(['apply', '--server-side', '-f', 'crds/']), 'install CRDs');
    await must(
      cluster.kubectl([
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/ratelimitroutes.portcullis.dev',
        'crd/oauthclients.portcullis.dev',
      ]),
      'wait CRDs',
    );
    for (const ns of [RELEASE_NS, ...namespaces])
      await must(cluster.kubectl(['create', 'namespace', ns]), `create namespace ${ns}`);
    // The chart exactly as a user installs it (without the bundled Redis: nothing runs pods here).
    const rendered = await must(
      cluster.helm([
        'template',
        RELEASE,
        'charts/portcullis',
        '--namespace',
        RELEASE_NS,
        '--kube-version',
        cluster.tools.kubernetesVersion,
        '--set',
        'redis.enabled=false',
        ...helmSet.flatMap((v) => ['--set', v]),
      ]),
      'helm template',
    );
    await must(
      cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: rendered }),
      'apply the chart',
    );
    const sa = parseAllDocuments(rendered)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
      .find((d) => d?.kind === 'ServiceAccount');
    const saName = sa?.metadata?.name ?? RELEASE;
    const kubeconfig = await cluster.kubeconfigFor({ namespace: RELEASE_NS, name: saName });
    return {
      cluster,
      kubeconfig,
      user: `system:serviceaccount:${RELEASE_NS}:${saName}`,
      auditLog,
      stop: () => cluster.stop(),
    };
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

export function auditEvents(env: OperatorEnv): AuditEvent[] {
  if (!existsSync(env.auditLog)) return [];
  return readFileSync(env.auditLog, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as AuditEvent);
}

export const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** The operator's write requests (leases and events excluded) received after `sinceIso`. */
export function operatorWrites(env: OperatorEnv, sinceIso = ''): AuditEvent[] {
  return auditEvents(env).filter(
    (e) =>
      e.user.username === env.user &&
      WRITE_VERBS.has(e.verb) &&
      e.requestReceivedTimestamp > sinceIso &&
      e.objectRef?.resource !== 'leases' &&
      e.objectRef?.resource !== 'events',
  );
}

/**
 * The operator's requests (leases excluded: the lease has its own client, outside the request
 * rate) received in [sinceIso, untilIso), once each (their ResponseComplete record); watches, which
 * complete only when they end, are left out.
 */
export function operatorRequests(env: OperatorEnv, sinceIso = '', untilIso = '9999'): AuditEvent[] {
  return auditEvents(env).filter(
    (e) =>
      e.user.username === env.user &&
      e.stage === 'ResponseComplete' &&
      e.verb !== 'watch' &&
      e.objectRef?.resource !== 'leases' &&
      e.requestReceivedTimestamp >= sinceIso &&
      e.requestReceivedTimestamp < untilIso,
  );
}

/** Every request of the operator refused for lack of permission (must stay empty). */
export function operatorForbidden(env: OperatorEnv): AuditEvent[] {
  return auditEvents(env).filter(
    (e) => e.user.username === env.user && e.responseStatus?.code === 403,
  );
}

export interface RunningOperator {
  program: Program;
  port: number;
  identity: string;
  metrics(): Promise<string>;
  readyz(): Promise<string>;
}

/** Fast timings for tests: lease 4 s, renew deadline 3 s, retry 0.5 s. */
export const FAST = {
  PORTCULLIS_LEASE_DURATION_MS: '4000',
  PORTCULLIS_RENEW_DEADLINE_MS: '3000',
  PORTCULLIS_RETRY_PERIOD_MS: '500',
};

export async function startOperator(
  env: OperatorEnv,
  identity: string,
  extra: Record<string, string> = {},
  launch: Pick<StartOptions, 'launcher'> = {},
): Promise<RunningOperator> {
  const port = await freePort();
  const program = await startProgram({
    ...launch,
    name: `operator-${identity}`,
    entry: 'dist/operator/main.mjs',
    env: {
      KUBECONFIG: env.kubeconfig,
      PORT: String(port),
      HOST: '127.0.0.1',
      POD_NAME: identity,
      POD_NAMESPACE: RELEASE_NS,
      PORTCULLIS_LEASE_NAME: LEASE,
      PORTCULLIS_SIDECAR_IMAGE: 'portcullis/sidecar:test',
      PORTCULLIS_AUTH_SERVER_IMAGE: 'portcullis/auth-server:test',
      LOG_LEVEL: 'info',
      ...FAST,
      ...extra,
    },
    waitPort: port,
  });
  const get = async (p: string) => (await fetch(`http://127.0.0.1:${port}${p}`)).text();
  return { program, port, identity, metrics: () => get('/metrics'), readyz: () => get('/readyz') };
}

/** Reconciles the operator's `controller` finished so far. */
export async function reconcileCount(
  operator: RunningOperator,
  controller?: string,
): Promise<number> {
  return metricValue(
    await operator.metrics(),
    'portcullis_operator_reconcile_total',
    controller === undefined ? {} : { controller },
  );
}

/**
 * Resolves after `periods` resync periods, seen rather than slept: a resync reconciles every
 * object of the kind once, so the routes' (or clients') controller has finished periods x objects
 * more reconciles than when this was called.
 */
export async function resyncs(
  env: OperatorEnv,
  operator: RunningOperator,
  kind: 'ratelimitroutes' | 'oauthclients',
  periods: number,
): Promise<void> {
  const controller = kind === 'ratelimitroutes' ? 'ratelimitroute' : 'oauthclient';
  const objects = (await env.cluster.kubectl(['get', kind, '-A', '-o', 'name'])).stdout
    .split('\n')
    .filter((l) => l.trim() !== '').length;
  const target = (await reconcileCount(operator, controller)) + periods * Math.max(1, objects);
  await eventually(
    `${periods} resync period(s) of the ${kind}`,
    async () => (await reconcileCount(operator, controller)) >= target,
    60_000,
  );
}

/** Resolves once `controller` has finished one more reconcile than when this was called (it is at work). */
export async function reconciling(operator: RunningOperator, controller: string): Promise<void> {
  const before = await reconcileCount(operator, controller);
  await eventually(
    `a ${controller} reconcile`,
    async () => (await reconcileCount(operator, controller)) > before,
    60_000,
    50,
  );
}

/**
 * Resolves once the operator is idle: its work queues are empty and no reconcile finished between
 * two scrapes, so the writes of the steps before have landed.
 */
export async function operatorIdle(operator: RunningOperator): Promise<void> {
  let last = -1;
  await eventually(
    'the operator idle (empty work queues, no reconcile between two scrapes)',
    async () => {
      const text = await operator.metrics();
      const done = metricValue(text, 'portcullis_operator_reconcile_total');
      const idle = metricValue(text, 'portcullis_operator_workqueue_depth') === 0 && done === last;
      last = done;
      return idle;
    },
    60_000,
    500,
  );
}

/** The value of one sample of a Prometheus text exposition (sum over matching label sets). */
export function metricValue(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m === null || m[1] !== name) continue;
    const set = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}="${v}"`))) sum += Number(m[3]);
  }
  return sum;
}

export interface GetResult<T> {
  found: boolean;
  obj: T;
}

/** kubectl get -o json as admin; undefined when not found. */
export async function kget(
  cluster: Cluster,
  args: readonly string[],
): Promise<Record<string, unknown> | undefined> {
  const r = await cluster.kubectl(['get', ...args, '-o', 'json']);
  if (r.code !== 0) {
    if (/NotFound|not found/.test(r.stderr)) return undefined;
    throw new Error(`kubectl get ${args.join(' ')}: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

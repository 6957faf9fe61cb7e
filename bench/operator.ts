// Operator benchmark (bench/README.md): N RateLimitRoutes created at once on a real kube-apiserver
// + etcd; the time until every route has its three children and a status, the operator's API
// requests per route (audit log, by verb), the writes of a no-op resync and of a restart (0), and
// its memory. The operator runs as deployed: its bundle with the V8, malloc and memory-limit
// settings `helm template` renders (BENCH_OPERATOR_NODE_OPTIONS replaces the V8 ones), in a memory
// cgroup of that limit, as the chart's ServiceAccount. No kubelet runs: routes converge to
// Ready=False/Progressing. `node bench/operator.ts` (BENCH_ROUTES, 200) writes results/operator.*.
import os from 'node:os';
import path from 'node:path';
import type { AuditEvent, RunningOperator } from '../test/harness/k8s/operator-env.ts';
import {
  auditEvents,
  eventually,
  metricValue,
  reconcileCount,
  startOperator,
  startOperatorEnv,
  WRITE_VERBS,
} from '../test/harness/k8s/operator-env.ts';
import { machine as machineOf, mib, peakRssMiB, r1, r2 } from './lib/measure.ts';
import { pool, writeResult } from './lib/suite.ts';
import {
  chartOperatorRuntime,
  countByVerb,
  makeCgroup,
  operatorMarkdown,
} from './operator-readings.ts';

const NS = 'bench';
const ROUTES = `/apis/portcullis.dev/v1alpha1/namespaces/${NS}/ratelimitroutes`;
/** The children of a route, each listed by its API path. */
const CHILDREN = ['/apis/apps/v1/deployments', '/api/v1/services', '/api/v1/configmaps'];

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from the API server

const route = (i: number): Obj => ({
  apiVersion: 'portcullis.dev/v1alpha1',
  kind: 'RateLimitRoute',
  metadata: { name: `route-${i}`, namespace: NS },
  spec: {
    target: { image: 'portcullis/user-service:bench', port: 8081, replicas: 1 },
    limiter: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
  },
});

const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));
const reconciles = (op: RunningOperator) => reconcileCount(op, 'ratelimitroute');

async function runOperatorBench(
  log: (line: string) => void,
  routes = Number(process.env['BENCH_ROUTES'] ?? 200),
) {
  const startedAt = new Date().toISOString();
  const { loadavgAtEnd: _, ...machine } = machineOf(os.loadavg().map(r1));
  const { loadavgAtStart } = machine;
  log(`starting kube-apiserver + etcd, CRDs, chart RBAC (load ${loadavgAtStart.join(' ')})`);
  const env = await startOperatorEnv([NS]);
  const workers = 4;
  const resyncMs = 30_000;
  const deployed = chartOperatorRuntime();
  const operatorNodeOptions =
    process.env['BENCH_OPERATOR_NODE_OPTIONS'] ?? deployed.env['NODE_OPTIONS'] ?? '';
  const operatorEnv = (resyncEveryMs: number) => ({
    PORTCULLIS_RESYNC_INTERVAL_MS: String(resyncEveryMs),
    PORTCULLIS_WORKERS: String(workers),
    LOG_LEVEL: 'warn',
    ...deployed.env,
    NODE_OPTIONS: operatorNodeOptions,
  });
  const cgroup = makeCgroup(`portcullis-bench-operator-${process.pid}`);
  if (typeof cgroup === 'string')
    log(`operator working set NOT MEASURED on this machine: ${cgroup}`);
  else cgroup.setLimit(deployed.memoryLimitBytes);
  const launch = typeof cgroup === 'string' ? {} : { launcher: cgroup.launcher };
  const op = await startOperator(env, 'op-bench', operatorEnv(resyncMs), launch);
  /** The operator's RSS and heap (its metrics) and working set (the cgroup), MiB. */
  const memory = async () => {
    const metrics = await op.metrics();
    return {
      rss: mib(metricValue(metrics, 'portcullis_operator_process_resident_memory_bytes')),
      heap: mib(metricValue(metrics, 'portcullis_operator_nodejs_heap_size_used_bytes')),
      workingSet: typeof cgroup === 'string' ? 0 : mib(cgroup.workingSet()),
    };
  };
  /** The operator's requests from audit record `from` on: its lease's, or all but its lease's. */
  const requestsSince = (from: number, lease = false) =>
    auditEvents(env)
      .slice(from)
      .filter(
        (e) => e.user.username === env.user && (e.objectRef?.resource === 'leases') === lease,
      );
  const writes = (events: AuditEvent[]) =>
    events.filter((e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'events').length;
  /** Waits until `o` has finished `routes` reconciles more than `from`; what they cost since `auditFrom`. */
  const reconcileEvery = async (
    o: RunningOperator,
    from: number,
    auditFrom: number,
    ms: number,
  ) => {
    const done = await eventually(
      `${routes} reconciles`,
      async () => {
        const n = (await reconciles(o)) - from;
        return n >= routes && n;
      },
      ms,
      200,
    );
    await settle(2000);
    const events = requestsSince(auditFrom);
    return { reconciles: done, writes: writes(events), requests: events.length };
  };
  try {
    await eventually('operator leading', async () => /leader/.test(await op.readyz()), 60_000);
    await settle(2000);
    const idle = await memory();
    const auditBefore = auditEvents(env).length;

    log(`creating ${routes} RateLimitRoutes (20 at a time)`);
    const t0 = performance.now();
    await pool(routes, 20, async (i) => {
      const res = await env.cluster.request('POST', ROUTES, route(i));
      if (res.status !== 201)
        throw new Error(
          `create route-${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
        );
    });
    const createMs = Math.round(performance.now() - t0);
    log(`created in ${createMs} ms; waiting for children and status`);
    const items = async (url: string) =>
      ((await env.cluster.request('GET', url)).body as Obj)['items'] as Obj[];
    const managed = `labelSelector=${encodeURIComponent('app.kubernetes.io/managed-by=portcullis-operator')}`;
    const converged = async () => {
      const ready = (await items(ROUTES)).filter(
        (r) =>
          r['status']?.['observedGeneration'] === 1 &&
          r['status']?.['conditions']?.[0]?.['reason'] === 'Progressing',
      );
      if (ready.length < routes) return false;
      for (const list of CHILDREN) {
        const [group, plural] = [path.dirname(list), path.basename(list)];
        if ((await items(`${group}/namespaces/${NS}/${plural}?${managed}`)).length < routes)
          return false;
      }
      return Math.round(performance.now() - t0);
    };
    // Each poll lists every route and child: poll less often for large N, so the watcher does
    // not load the API server it measures (resolution: N/2 ms, 500 ms for 1,000 routes).
    const convergenceMs = await eventually(
      'convergence',
      converged,
      600_000,
      Math.max(100, routes / 2),
    );
    log(`converged in ${convergenceMs} ms`);
    await settle(3000); // let the last watch events and status echoes settle
    const convergedMemory = await memory();
    const work = requestsSince(auditBefore);
    const leaseRequests = requestsSince(auditBefore, true).length;

    // The next periodic resync reconciles every route again; it must write nothing.
    log(`no-op resync: waiting for the next periodic resync (every ${resyncMs / 1000} s)`);
    const [at, auditAt] = [await reconciles(op), auditEvents(env).length];
    const noopResync = await reconcileEvery(op, at, auditAt, resyncMs * 3);

    // A restart lists everything and reconciles every route: the worst case of a resync.
    log('restart: a new operator lists and reconciles every route; counting its writes');
    const peakRss = peakRssMiB(op.program.child.pid);
    const peakCharge = typeof cgroup === 'string' ? 0 : mib(cgroup.peak());
    await op.program.stop();
    const restartAt = auditEvents(env).length;
    const op2 = await startOperator(env, 'op-bench-2', operatorEnv(600_000));
    const restart = await reconcileEvery(op2, 0, restartAt, 300_000).finally(() =>
      op2.program.stop(),
    );

    return {
      suite: 'operator' as const,
      startedAt,
      machine,
      kubernetes: env.cluster.tools.kubernetesVersion,
      routes,
      workers,
      operatorNodeOptions,
      memoryLimitMiB: mib(deployed.memoryLimitBytes),
      createMs,
      convergenceMs,
      requests: {
        total: work.length,
        perRoute: r2(work.length / routes),
        writesPerRoute: r2(writes(work) / routes),
        byVerb: countByVerb(work),
        leaseRequests,
      },
      noopResync,
      restart,
      memoryMiB: {
        idleRss: idle.rss,
        idleHeap: idle.heap,
        convergedRss: convergedMemory.rss,
        convergedHeap: convergedMemory.heap,
        peakRss,
      },
      workingSetMiB:
        typeof cgroup === 'string'
          ? { notMeasured: cgroup }
          : { idle: idle.workingSet, converged: convergedMemory.workingSet, peakCharge },
    };
  } finally {
    if (!op.program.exited()) await op.program.stop();
    if (typeof cgroup !== 'string') cgroup.remove();
    await env.stop();
  }
}

export type OperatorBenchResult = Awaited<ReturnType<typeof runOperatorBench>>;

/** The operator-scale suite of bench/run.ts: a run per size of BENCH_OPERATOR_ROUTES (200,1000). */
export async function runOperatorScale(log: (line: string) => void) {
  const sizes = (process.env['BENCH_OPERATOR_ROUTES'] ?? '200,1000').split(',').map(Number);
  const runs: OperatorBenchResult[] = [];
  for (const n of sizes.filter((x) => x > 0)) {
    log(`-- ${n} RateLimitRoutes`);
    runs.push(await runOperatorBench(log, n));
  }
  return { suite: 'operator' as const, runs };
}

if (import.meta.main) {
  const result = await runOperatorBench((line) => console.log(line));
  const results = path.join(import.meta.dirname, 'results');
  writeResult(results, 'operator', result, operatorMarkdown(result));
  process.exit(0);
}

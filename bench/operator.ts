// Operator benchmark: create N RateLimitRoutes at once on a real kube-apiserver + etcd
// and measure
//   1. the time until every route has its three children and a status for its generation,
//   2. the API requests the operator made per route (from the API server's audit log, by verb),
//   3. the writes of a no-op resync of all N (should be 0),
//   4. the operator's memory (RSS and heap, idle and after convergence; peak RSS; and, where the
//      machine lets the benchmark make a memory cgroup, the working set the kubelet would report).
// The operator runs as deployed: its bundle, with the V8 and malloc settings and the memory limit
// that `helm template` of the chart renders (BENCH_OPERATOR_NODE_OPTIONS replaces the V8 settings,
// to compare others), inside a memory cgroup with that limit, as its own process with the chart's
// ServiceAccount and RBAC, as in the k8s tests. No kubelet runs: routes converge to Ready=False/Progressing (pods never start); that is
// the status the benchmark waits for. `node bench/operator.ts` (BENCH_ROUTES, default 200) writes
// bench/results/operator.json and operator.md; bench/run.ts can call runOperatorBench too.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  auditEvents,
  eventually,
  metricValue,
  startOperator,
  startOperatorEnv,
} from '../test/harness/k8s/operator-env.ts';
import { makeCgroup } from './lib/cgroup.ts';
import { chartOperatorRuntime, countByVerb, mib, peakRssMiB, WRITES } from './operator-readings.ts';
import { operatorMarkdown, type OperatorBenchResult } from './operator-report.ts';

const NS = 'bench';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON from the API server

function route(i: number): Obj {
  return {
    apiVersion: 'portcullis.dev/v1alpha1',
    kind: 'RateLimitRoute',
    metadata: { name: `route-${i}`, namespace: NS },
    spec: {
      target: { image: 'portcullis/user-service:bench', port: 8081, replicas: 1 },
      limiter: { replenishRate: 20, burstCapacity: 100, requestedTokens: 3 },
    },
  };
}

export async function runOperatorBench(
  log: (line: string) => void,
  routes = Number(process.env['BENCH_ROUTES'] ?? 200),
): Promise<OperatorBenchResult> {
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg().map((x) => Math.round(x * 10) / 10);
  log(`starting kube-apiserver + etcd, CRDs, chart RBAC (load ${loadavgAtStart.join(' ')})`);
  const env = await startOperatorEnv([NS]);
  const workers = 4;
  const deployed = chartOperatorRuntime();
  const operatorNodeOptions =
    process.env['BENCH_OPERATOR_NODE_OPTIONS'] ?? deployed.env['NODE_OPTIONS'] ?? '';
  const nodeOptions: Record<string, string> = {
    ...deployed.env,
    NODE_OPTIONS: operatorNodeOptions,
  };
  const resyncMs = 30_000;
  const cgroup = makeCgroup(`portcullis-bench-operator-${process.pid}`);
  if (typeof cgroup === 'string')
    log(`operator working set NOT MEASURED on this machine: ${cgroup}`);
  else cgroup.setLimit(deployed.memoryLimitBytes);
  const launch =
    typeof cgroup === 'string'
      ? {}
      : {
          launcher: [
            'sh',
            '-c',
            `echo $$ > ${path.join(cgroup.dir, 'cgroup.procs')} && exec "$@"`,
            'sh',
          ],
        };
  const workingSet = () => (typeof cgroup === 'string' ? 0 : mib(cgroup.workingSet()));
  const op = await startOperator(
    env,
    'op-bench',
    {
      PORTCULLIS_RESYNC_INTERVAL_MS: String(resyncMs),
      PORTCULLIS_WORKERS: String(workers),
      LOG_LEVEL: 'warn',
      ...nodeOptions,
    },
    launch,
  );
  try {
    await eventually('operator leading', async () => /leader/.test(await op.readyz()), 60_000);
    await new Promise((r) => setTimeout(r, 2000));
    const idle = await op.metrics();
    const idleRss = mib(metricValue(idle, 'portcullis_operator_process_resident_memory_bytes'));
    const idleHeap = mib(metricValue(idle, 'portcullis_operator_nodejs_heap_size_used_bytes'));
    const idleWorkingSet = workingSet();
    const auditBefore = auditEvents(env).length;

    log(`creating ${routes} RateLimitRoutes (20 at a time)`);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < routes) {
          const i = next++;
          const res = await env.cluster.request(
            'POST',
            `/apis/portcullis.dev/v1alpha1/namespaces/${NS}/ratelimitroutes`,
            route(i),
          );
          if (res.status !== 201)
            throw new Error(
              `create route-${i}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
            );
        }
      }),
    );
    const createMs = Math.round(performance.now() - t0);
    log(`created in ${createMs} ms; waiting for children and status`);

    const count = async (plural: string, group = '') => {
      const base = group === '' ? `/api/v1` : `/apis/${group}`;
      const res = await env.cluster.request(
        'GET',
        `${base}/namespaces/${NS}/${plural}?labelSelector=${encodeURIComponent('app.kubernetes.io/managed-by=portcullis-operator')}`,
      );
      return ((res.body as Obj)['items'] as Obj[]).length;
    };
    let convergenceMs = 0;
    await eventually(
      'convergence',
      async () => {
        const res = await env.cluster.request(
          'GET',
          `/apis/portcullis.dev/v1alpha1/namespaces/${NS}/ratelimitroutes`,
        );
        const items = (res.body as Obj)['items'] as Obj[];
        const withStatus = items.filter(
          (r) =>
            r['status']?.['observedGeneration'] === 1 &&
            r['status']?.['conditions']?.[0]?.['reason'] === 'Progressing',
        ).length;
        if (withStatus < routes) return false;
        const [deployments, services, configMaps] = [
          await count('deployments', 'apps/v1'),
          await count('services'),
          await count('configmaps'),
        ];
        if (deployments < routes || services < routes || configMaps < routes) return false;
        convergenceMs = Math.round(performance.now() - t0);
        return true;
      },
      600_000,
      // Each poll lists every route and child: poll less often for large N, so the watcher does
      // not load the API server it measures (resolution: N/2 ms, 500 ms for 1,000 routes).
      Math.max(100, routes / 2),
    );
    log(`converged in ${convergenceMs} ms`);
    await new Promise((r) => setTimeout(r, 3000)); // let the last watch events and status echoes settle
    const converged = await op.metrics();
    const convergedRss = mib(
      metricValue(converged, 'portcullis_operator_process_resident_memory_bytes'),
    );
    const convergedHeap = mib(
      metricValue(converged, 'portcullis_operator_nodejs_heap_size_used_bytes'),
    );
    const convergedWorkingSet = workingSet();

    const window = auditEvents(env)
      .slice(auditBefore)
      .filter((e) => e.user.username === env.user);
    const leaseRequests = window.filter((e) => e.objectRef?.resource === 'leases').length;
    const work = window.filter((e) => e.objectRef?.resource !== 'leases');
    const writes = work.filter(
      (e) => WRITES.has(e.verb) && e.objectRef?.resource !== 'events',
    ).length;

    // 3a. The next periodic resync reconciles every route again; it must write nothing.
    log(`no-op resync: waiting for the next periodic resync (every ${resyncMs / 1000} s)`);
    const reconcilesAt = metricValue(await op.metrics(), 'portcullis_operator_reconcile_total', {
      controller: 'ratelimitroute',
    });
    const periodicFrom = auditEvents(env).length;
    let periodicReconciles = 0;
    await eventually(
      'periodic resync of every route',
      async () => {
        periodicReconciles =
          metricValue(await op.metrics(), 'portcullis_operator_reconcile_total', {
            controller: 'ratelimitroute',
          }) - reconcilesAt;
        return periodicReconciles >= routes;
      },
      resyncMs * 3,
      200,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const periodic = auditEvents(env)
      .slice(periodicFrom)
      .filter((e) => e.user.username === env.user && e.objectRef?.resource !== 'leases');
    const periodicWrites = periodic.filter(
      (e) => WRITES.has(e.verb) && e.objectRef?.resource !== 'events',
    ).length;

    // 3b. A restart lists everything and reconciles every route: the worst case of a resync.
    log('restart: a new operator lists and reconciles every route; counting its writes');
    const peakRss = peakRssMiB(op.program.child.pid);
    const peakCharge = typeof cgroup === 'string' ? 0 : mib(cgroup.peak());
    await op.program.stop();
    const resyncFrom = auditEvents(env).length;
    const op2 = await startOperator(env, 'op-bench-2', {
      PORTCULLIS_RESYNC_INTERVAL_MS: '600000',
      PORTCULLIS_WORKERS: String(workers),
      LOG_LEVEL: 'warn',
      ...nodeOptions,
    });
    let reconciles = 0;
    try {
      await eventually(
        'restart reconciled every route',
        async () => {
          reconciles = metricValue(await op2.metrics(), 'portcullis_operator_reconcile_total', {
            controller: 'ratelimitroute',
          });
          return reconciles >= routes;
        },
        300_000,
        200,
      );
      await new Promise((r) => setTimeout(r, 2000));
    } finally {
      await op2.program.stop();
    }
    const resync = auditEvents(env)
      .slice(resyncFrom)
      .filter((e) => e.user.username === env.user && e.objectRef?.resource !== 'leases');
    const resyncWrites = resync.filter(
      (e) => WRITES.has(e.verb) && e.objectRef?.resource !== 'events',
    ).length;

    return {
      suite: 'operator',
      startedAt,
      machine: {
        cpus: os.cpus().length,
        model: os.cpus()[0]?.model ?? 'unknown',
        node: process.version,
        loadavgAtStart,
      },
      kubernetes: env.cluster.tools.kubernetesVersion,
      routes,
      workers,
      operatorNodeOptions,
      memoryLimitMiB: mib(deployed.memoryLimitBytes),
      createMs,
      convergenceMs,
      requests: {
        total: work.length,
        perRoute: Math.round((work.length / routes) * 100) / 100,
        writesPerRoute: Math.round((writes / routes) * 100) / 100,
        byVerb: countByVerb(work),
        leaseRequests,
      },
      noopResync: {
        reconciles: periodicReconciles,
        writes: periodicWrites,
        requests: periodic.length,
      },
      restart: { reconciles, writes: resyncWrites, requests: resync.length },
      memoryMiB: { idleRss, idleHeap, convergedRss, convergedHeap, peakRss },
      workingSetMiB:
        typeof cgroup === 'string'
          ? { notMeasured: cgroup }
          : { idle: idleWorkingSet, converged: convergedWorkingSet, peakCharge },
    };
  } finally {
    if (!op.program.exited()) await op.program.stop();
    if (typeof cgroup !== 'string') cgroup.remove();
    await env.stop();
  }
}

if (import.meta.main) {
  const result = await runOperatorBench((line) => console.log(line));
  const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'operator.json'), `${JSON.stringify(result, null, 2)}\n`);
  const md = operatorMarkdown(result);
  writeFileSync(path.join(dir, 'operator.md'), `${md}\n`);
  console.log(`\n${md}\n\nwritten: bench/results/operator.json, bench/results/operator.md`);
  process.exit(0);
}

// The operator suite's result and its Markdown (bench/results/operator.md).

export interface OperatorBenchResult {
  readonly suite: 'operator';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavgAtStart: number[] };
  readonly kubernetes: string;
  readonly routes: number;
  readonly workers: number;
  /** NODE_OPTIONS of the operator process: the chart's, or BENCH_OPERATOR_NODE_OPTIONS. */
  readonly operatorNodeOptions: string;
  /** The chart's memory limit of the operator container, MiB (the cgroup's limit). */
  readonly memoryLimitMiB: number;
  /** Client side: time to send all creates (concurrency 20), ms. */
  readonly createMs: number;
  /** From the first create until every route had 3 children and status.observedGeneration 1, ms. */
  readonly convergenceMs: number;
  readonly requests: {
    readonly total: number;
    readonly perRoute: number;
    readonly writesPerRoute: number;
    /** verb/resource -> count, convergence window only (leases excluded, listed separately). */
    readonly byVerb: Record<string, number>;
    readonly leaseRequests: number;
  };
  /** A periodic resync of every route after convergence (reconciles counted from the operator's metrics). */
  readonly noopResync: {
    readonly reconciles: number;
    readonly writes: number;
    readonly requests: number;
  };
  /** An operator restart: list everything and reconcile every route again. */
  readonly restart: {
    readonly reconciles: number;
    readonly writes: number;
    readonly requests: number;
  };
  readonly memoryMiB: {
    readonly idleRss: number;
    readonly idleHeap: number;
    readonly convergedRss: number;
    readonly convergedHeap: number;
    readonly peakRss: number;
  };
  /** The cgroup's working set (charge less inactive file pages) idle, converged and its peak charge, MiB; or why not measured. */
  readonly workingSetMiB:
    | { readonly idle: number; readonly converged: number; readonly peakCharge: number }
    | { readonly notMeasured: string };
}

export function operatorMarkdown(r: OperatorBenchResult): string {
  const verbs = Object.entries(r.requests.byVerb)
    .map(([k, v]) => `| ${k} | ${v} | ${Math.round((v / r.routes) * 100) / 100} |`)
    .join('\n');
  return `Operator benchmark, ${r.startedAt}: ${r.machine.cpus} CPUs (${r.machine.model}), Node ${r.machine.node}, kube-apiserver ${r.kubernetes} + etcd on loopback, operator as deployed (its bundle, NODE_OPTIONS ${r.operatorNodeOptions}, MALLOC_ARENA_MAX 2) with ${r.workers} workers per controller as the chart ServiceAccount; load average at start ${r.machine.loadavgAtStart.join(' ')}.

| measure | value |
|---|---:|
| RateLimitRoutes created at once | ${r.routes} |
| client time to create them (20 concurrent) | ${r.createMs} ms |
| until every route had its 3 children and its status | ${r.convergenceMs} ms |
| operator API requests per route (convergence) | ${r.requests.perRoute} |
| operator writes per route (children + status) | ${r.requests.writesPerRoute} |
| writes of a periodic no-op resync of all routes | ${r.noopResync.writes} (${r.noopResync.requests} requests, ${r.noopResync.reconciles} reconciles) |
| writes of an operator restart (list + reconcile every route) | ${r.restart.writes} (${r.restart.requests} requests, ${r.restart.reconciles} reconciles) |
| operator RSS idle / converged / peak | ${r.memoryMiB.idleRss} / ${r.memoryMiB.convergedRss} / ${r.memoryMiB.peakRss} MiB |
| operator heap used idle / converged | ${r.memoryMiB.idleHeap} / ${r.memoryMiB.convergedHeap} MiB |
| operator working set idle / converged, peak charge (memory cgroup, limit ${r.memoryLimitMiB} MiB) | ${'notMeasured' in r.workingSetMiB ? `not measured: ${r.workingSetMiB.notMeasured}` : `${r.workingSetMiB.idle} / ${r.workingSetMiB.converged} MiB, ${r.workingSetMiB.peakCharge} MiB`} |

Requests of the operator during convergence, by verb and resource (audit log; ${r.requests.leaseRequests} lease requests not counted):

| request | count | per route |
|---|---:|---:|
${verbs}`;
}

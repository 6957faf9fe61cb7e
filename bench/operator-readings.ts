// What the operator suite reads from outside the operator: its container as the chart renders it
// (helm template), its API requests by verb (the API server's audit log) and its memory in a
// cgroup; and how it reports them (bench/results/operator.md, a table per size in
// operator-scale.md). The memory cgroup has the chart's hard limit, to run the operator as a pod's
// `resources.limits.memory` would (RSS alone counts the node executable's pages in full; the
// kernel charges a page-cache page to the first cgroup that read it and reclaims clean file pages
// before it kills anything). It needs root and a writable memory controller (cgroup v1 or v2);
// elsewhere makeCgroup says why not.
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { quantityOf } from '../operator/resources/shared/container-resources.ts';
import { k8sTools } from '../test/harness/k8s/cluster.ts';
import type { AuditEvent } from '../test/harness/k8s/operator-env.ts';
import { repoRoot } from '../test/harness/programs.ts';
import type { OperatorBenchResult } from './operator.ts';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the chart's objects from helm template

/** The operator container as the chart renders it with its defaults: NODE_OPTIONS, MALLOC_ARENA_MAX, memory limit. */
export function chartOperatorRuntime() {
  const { helm, kubernetesVersion } = k8sTools();
  const chart = path.join(repoRoot, 'charts/portcullis');
  const args = ['--namespace', 'portcullis-system', '--kube-version', kubernetesVersion];
  const res = spawnSync(helm, ['template', 'portcullis', chart, ...args], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`helm template: ${res.stderr}`);
  const operator = parseAllDocuments(res.stdout)
    .map((d) => d.toJS() as Obj | null)
    .find(
      (o) =>
        o?.['kind'] === 'Deployment' &&
        o['spec']['template']['metadata']['labels']['app.kubernetes.io/component'] === 'operator',
    );
  const container = operator?.['spec']['template']['spec']['containers'][0] as Obj | undefined;
  if (container === undefined) throw new Error('helm template rendered no operator Deployment');
  const env: Record<string, string> = Object.fromEntries(
    (container['env'] as Obj[])
      .filter((e) => ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'].includes(e['name']))
      .map((e) => [e['name'], String(e['value'])]),
  );
  const memoryLimitBytes = quantityOf(String(container['resources']['limits']['memory']));
  if (memoryLimitBytes === undefined) throw new Error('the chart sets no operator memory limit');
  return { env, memoryLimitBytes };
}

export function countByVerb(events: AuditEvent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of events) {
    const key = `${e.verb} ${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
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

const read = (file: string) => readFileSync(file, 'utf8').trim();

/** Where each cgroup version keeps the limit, the charge, the peak charge and (in memory.stat) the inactive file pages. */
const FILES = {
  1: [
    'memory.limit_in_bytes',
    'memory.usage_in_bytes',
    'memory.max_usage_in_bytes',
    'total_inactive_file',
  ],
  2: ['memory.max', 'memory.current', 'memory.peak', 'inactive_file'],
} as const;

function cgroupAt(version: 1 | 2, dir: string) {
  mkdirSync(dir);
  const [limit, usage, peak, inactiveFile] = FILES[version];
  const number = (file: string) => Number(read(path.join(dir, file)));
  return {
    /** A launcher (StartOptions.launcher) that moves the program it starts into this cgroup. */
    launcher: ['sh', '-c', `echo $$ > ${path.join(dir, 'cgroup.procs')} && exec "$@"`, 'sh'],
    setLimit: (bytes: number) => writeFileSync(path.join(dir, limit), String(bytes)),
    /** Highest charge since the cgroup was made, bytes. */
    peak: () => number(peak),
    /** What the kubelet reports as the container's working set: the charge less its inactive file pages, bytes. */
    workingSet: () => {
      const stat = read(path.join(dir, 'memory.stat'));
      const inactive = new RegExp(`^${inactiveFile} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0;
      return Math.max(0, number(usage) - Number(inactive));
    },
    remove: () => rmdirSync(dir),
  };
}

/** A new child of this process' memory cgroup, or the reason there can be none. */
export function makeCgroup(name: string): ReturnType<typeof cgroupAt> | string {
  const lines = read('/proc/self/cgroup').split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  const v1Root = '/sys/fs/cgroup/memory';
  const v2 = lines.find((l) => l.startsWith('0::'));
  const v2Root = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? '/sys/fs/cgroup'
    : '/sys/fs/cgroup/unified';
  try {
    if (v1 !== undefined && existsSync(path.join(v1Root, 'memory.limit_in_bytes')))
      return cgroupAt(1, path.join(v1Root, v1.split(':')[2] ?? '/', name));
    if (v2 === undefined) return 'no memory cgroup controller in /proc/self/cgroup';
    const parent = path.join(v2Root, v2.slice(3));
    if (!read(path.join(parent, 'cgroup.subtree_control')).split(' ').includes('memory'))
      return `the cgroup v2 group ${parent} does not delegate the memory controller`;
    return cgroupAt(2, path.join(parent, name));
  } catch (err) {
    return `cannot make a memory cgroup: ${(err as Error).message}`;
  }
}

// What the operator suite reads from outside the operator: its container as the chart renders it
// (helm template), its peak RSS (/proc), and its API requests by verb (the API server's audit log).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { quantityOf } from '../operator/resources/shared/container-resources.ts';
import { k8sTools } from '../test/harness/k8s/cluster.ts';
import type { AuditEvent } from '../test/harness/k8s/operator-env.ts';

const repoRoot = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the chart's objects from helm template

/** The operator container as the chart renders it with its defaults: NODE_OPTIONS, MALLOC_ARENA_MAX, memory limit. */
export function chartOperatorRuntime(): { env: Record<string, string>; memoryLimitBytes: number } {
  const tools = k8sTools();
  const res = spawnSync(
    tools.helm,
    [
      'template',
      'portcullis',
      path.join(repoRoot, 'charts/portcullis'),
      '--namespace',
      'portcullis-system',
      '--kube-version',
      tools.kubernetesVersion,
    ],
    { encoding: 'utf8' },
  );
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
  const env = Object.fromEntries(
    (container['env'] as Obj[])
      .filter((e) => ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'].includes(e['name']))
      .map((e) => [e['name'], String(e['value'])]),
  );
  const memoryLimitBytes = quantityOf(String(container['resources']['limits']['memory']));
  if (memoryLimitBytes === undefined) throw new Error('the chart sets no operator memory limit');
  return { env, memoryLimitBytes };
}

export const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

export function peakRssMiB(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m === null ? 0 : Math.round((Number(m[1]) / 1024) * 10) / 10;
}

export function countByVerb(events: AuditEvent[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of events) {
    const key = `${e.verb} ${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
    out[key] = (out[key] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

export const WRITES = new Set(['create', 'update', 'patch', 'delete']);

// What the pods cost on a real node: each container's memory working set and CPU, from the
// kubelet's summary API (/api/v1/nodes/NODE/proxy/stats/summary), at idle and while a client
// pod drives the gateway. Written to bench/results/e2e-footprint.{json,md}.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { SIDECAR_MEMORY_LIMIT_MIB } from '../../operator/resources/route/deployment.ts';
import { Kube } from '../harness/kind/kube.ts';
import { deploymentOfPod } from './support/pod-owner.ts';
import { writeResult } from './support/results.ts';
import {
  CLIENT_POD,
  deploy,
  inCluster,
  namespaceFor,
  oauthClient,
  route,
  usersSecret,
} from './support/workloads.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('footprint');
const STOP = '/tmp/stop-stream';
const RATE = 100;

interface Summary {
  pods: Array<{
    podRef: { name: string; namespace: string };
    containers?: Array<{
      name: string;
      cpu?: { usageNanoCores?: number };
      memory?: { workingSetBytes?: number };
    }>;
  }>;
}

interface Sample {
  /** namespace/pod-prefix/container -> [workingSetMiB, cpuMillicores] */
  readonly [key: string]: { workingSetMiB: number; cpuMillicores: number };
}

/** The pods' labels by namespace/name: the table keys on the Deployment, named from pod-template-hash. */
async function podLabels(): Promise<Map<string, Record<string, string>>> {
  const list = await kube.json<{
    items: Array<{
      metadata: { name: string; namespace: string; labels?: Record<string, string> };
    }>;
  }>(['get', 'pods', '--all-namespaces']);
  return new Map(
    list.items.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.metadata.labels ?? {}]),
  );
}

async function sample(): Promise<Sample> {
  const summary = JSON.parse(
    await kube.kubectl(['get', '--raw', `/api/v1/nodes/${ctx.node}/proxy/stats/summary`]),
  ) as Summary;
  const labels = await podLabels();
  const out: Record<string, { workingSetMiB: number; cpuMillicores: number }> = {};
  for (const pod of summary.pods) {
    const namespace =
      pod.podRef.namespace === ctx.releaseNamespace
        ? 'release'
        : pod.podRef.namespace === ns
          ? 'route'
          : undefined;
    if (namespace === undefined) continue;
    for (const c of pod.containers ?? []) {
      const key = `${deploymentOfPod(pod.podRef.name, labels.get(`${pod.podRef.namespace}/${pod.podRef.name}`))}/${c.name}`;
      const cur = {
        workingSetMiB: (c.memory?.workingSetBytes ?? 0) / 1048576,
        cpuMillicores: (c.cpu?.usageNanoCores ?? 0) / 1e6,
      };
      const prev = out[key];
      // Two pods of one Deployment: keep the larger of each figure.
      out[key] = prev
        ? {
            workingSetMiB: Math.max(prev.workingSetMiB, cur.workingSetMiB),
            cpuMillicores: Math.max(prev.cpuMillicores, cur.cpuMillicores),
          }
        : cur;
    }
  }
  return out;
}

function maxOf(samples: readonly Sample[]): Sample {
  const out: Record<string, { workingSetMiB: number; cpuMillicores: number }> = {};
  for (const s of samples) {
    for (const [k, v] of Object.entries(s)) {
      const prev = out[k];
      out[k] = prev
        ? {
            workingSetMiB: Math.max(prev.workingSetMiB, v.workingSetMiB),
            cpuMillicores: Math.max(prev.cpuMillicores, v.cpuMillicores),
          }
        : v;
    }
  }
  return out;
}

beforeAll(async () => {
  // The route, and an OAuthClient so that the namespace runs an auth server too.
  await deploy(kube, ctx, ns, [
    route(ctx, 'all', {
      replicas: 2,
      limits: { replenishRate: 1000, burstCapacity: 2000, requestedTokens: 1 },
    }),
    await usersSecret([{ username: 'dave', password: 'dave-e2e-password' }]),
    oauthClient('footprint-app', ['https://app.example/callback']),
  ]);
  await kube.wait(ns, ['oauthclient/footprint-app'], 'condition=Ready', 300);
  await kube.rolloutStatus(ns, 'portcullis-auth-server');
});

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

describe("the pods' footprint on the node", () => {
  it('working set and CPU of every container, at idle and under a steady 100 requests/s through the gateway', async () => {
    // Idle: the kubelet's CPU figure is a rate over its last housekeeping interval (10-15 s).
    await new Promise((r) => setTimeout(r, 20_000));
    const idle = maxOf([await sample(), await sample()]);

    await kube.exec(ns, CLIENT_POD, ['rm', '-f', STOP]);
    const stream = inCluster<{ sent: number; ok: number; failures: unknown[] }>(
      kube,
      ns,
      'stream',
      {
        url: `http://all.${ns}.svc.cluster.local/healthcheck/ready`,
        perSecond: RATE,
        stopFile: STOP,
        maxMs: 120_000,
      },
      180_000,
    );
    const underLoad: Sample[] = [];
    await new Promise((r) => setTimeout(r, 15_000));
    for (let i = 0; i < 6; i++) {
      underLoad.push(await sample());
      await new Promise((r) => setTimeout(r, 5000));
    }
    await kube.exec(ns, CLIENT_POD, ['touch', STOP]);
    const load = await stream;
    expect(load.failures).toEqual([]);
    const busy = maxOf(underLoad);

    const keys = [...new Set([...Object.keys(idle), ...Object.keys(busy)])].sort();
    for (const expected of [
      'all/sidecar',
      'all/target',
      'portcullis-auth-server/auth-server',
      `${ctx.release}-operator/operator`,
      `${ctx.release}-redis/redis`,
      `${ctx.release}-auth-redis/redis`,
    ])
      expect(keys).toContain(expected);
    const round = (n: number | undefined) => (n === undefined ? null : Math.round(n * 10) / 10);
    const rows = keys.map((k) => ({
      container: k,
      idleWorkingSetMiB: round(idle[k]?.workingSetMiB),
      loadWorkingSetMiB: round(busy[k]?.workingSetMiB),
      idleCpuMillicores: round(idle[k]?.cpuMillicores),
      loadCpuMillicores: round(busy[k]?.cpuMillicores),
    }));
    writeResult('e2e-footprint', {
      title: "Pods' footprint on the kind node (kubelet summary API)",
      note: `Kubernetes ${ctx.kubernetesVersion}, one node, images ${ctx.images}. Idle: after 20 s without traffic. Load: ${RATE} requests/s for ${load.sent} requests through the route's Service from a client pod (2 route pods; the larger pod's figure). Working set in MiB, CPU in millicores (the kubelet's rate over its housekeeping interval), the highest of the samples taken.`,
      rows,
    });
    // The sidecar under load carries the traffic, and stays well inside its container limit.
    expect(busy['all/sidecar']!.cpuMillicores).toBeGreaterThan(idle['all/sidecar']!.cpuMillicores);
    expect(busy['all/sidecar']!.workingSetMiB).toBeLessThan(SIDECAR_MEMORY_LIMIT_MIB);
    for (const row of rows)
      expect(row.loadWorkingSetMiB ?? row.idleWorkingSetMiB).toBeGreaterThan(0);
  });
});

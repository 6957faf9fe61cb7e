// No failed request while pods come and go: a steady client inside the cluster (keep-alive
// connections, as real clients use) calls a route's Service through a spec change that rolls
// the pods, the deletion of one of its two pods, and a restart of the operator. Every answer
// must be a 200 (the limits are far above the stream's rate).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, Kube } from '../harness/kind/kube.ts';
import {
  CLIENT_POD,
  deploy,
  inCluster,
  namespaceFor,
  route,
  routePods,
} from './support/workloads.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('rollouts');
const STOP = '/tmp/stop-stream';

interface StreamResult {
  sent: number;
  ok: number;
  failures: Array<{ atMs: number; status?: number; error?: string; body?: string }>;
  elapsedMs: number;
}

beforeAll(async () => {
  await deploy(kube, ctx, ns, [
    route(ctx, 'steady', {
      replicas: 2,
      limits: { replenishRate: 1000, burstCapacity: 2000, requestedTokens: 1 },
    }),
  ]);
});

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

/** Runs the stream for the duration of `during`, then stops it and returns what it saw. */
async function streamThrough(during: () => Promise<void>): Promise<StreamResult> {
  await kube.exec(ns, CLIENT_POD, ['rm', '-f', STOP]);
  const stream = inCluster<StreamResult>(
    kube,
    ns,
    'stream',
    {
      url: `http://steady.${ns}.svc.cluster.local/healthcheck/ready`,
      perSecond: 20,
      stopFile: STOP,
      maxMs: 240_000,
    },
    300_000,
  );
  // Let the stream settle on its connections before anything changes.
  await new Promise((r) => setTimeout(r, 3000));
  try {
    await during();
    // The pods that were stopping finish their shutdown while the stream still runs.
    await new Promise((r) => setTimeout(r, 5000));
  } finally {
    await kube.exec(ns, CLIENT_POD, ['touch', STOP]);
  }
  return stream;
}

async function podNames(): Promise<string[]> {
  return (await routePods(kube, ns, 'steady')).map((p) => p.name).sort();
}

async function waitAllReady(count: number, notIn: readonly string[] = []): Promise<string[]> {
  return eventually(
    `${count} Ready route pods`,
    async () => {
      const pods = await routePods(kube, ns, 'steady');
      const ready = pods.filter((p) => p.ready && !notIn.includes(p.name));
      return ready.length === count && pods.length === count
        ? ready.map((p) => p.name).sort()
        : undefined;
    },
    240_000,
    1000,
  );
}

function expectNoFailures(result: StreamResult, what: string): void {
  const summary = `${what}: ${result.ok}/${result.sent} OK in ${Math.round(result.elapsedMs)} ms; failures: ${JSON.stringify(result.failures.slice(0, 10))}`;
  console.log(summary);
  expect(result.sent).toBeGreaterThan(100);
  expect(result.failures, summary).toEqual([]);
  expect(result.ok).toBe(result.sent);
}

describe('zero failed requests while pods change', () => {
  it('a spec change rolls both pods and the stream sees no failure', async () => {
    const before = await podNames();
    const result = await streamThrough(async () => {
      await kube.kubectl([
        '-n',
        ns,
        'patch',
        'ratelimitroute',
        'steady',
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { limiter: { replenishRate: 999 } } }),
      ]);
      await kube.rolloutStatus(ns, 'steady');
      await waitAllReady(2, before);
    });
    const after = await podNames();
    expect(after.some((p) => before.includes(p))).toBe(false);
    expectNoFailures(result, 'spec change roll');
  });

  it('deleting one of the two pods: the stream sees no failure', async () => {
    const [victim] = await podNames();
    const result = await streamThrough(async () => {
      await kube.kubectl(['-n', ns, 'delete', 'pod', victim!, '--wait=true'], {
        timeoutMs: 120_000,
      });
      await waitAllReady(2, [victim!]);
    });
    expect(await podNames()).not.toContain(victim);
    expectNoFailures(result, 'pod deletion');
  });

  it('restarting the operator: the stream sees no failure and the route pods stay', async () => {
    const before = await podNames();
    const result = await streamThrough(async () => {
      await kube.kubectl([
        '-n',
        ctx.releaseNamespace,
        'rollout',
        'restart',
        `deployment/${ctx.release}-operator`,
      ]);
      await kube.rolloutStatus(ctx.releaseNamespace, `${ctx.release}-operator`);
      // The new operator has reconciled the route again (its status names the current generation).
      await kube.wait(ns, ['ratelimitroute/steady'], 'condition=Ready', 120);
    });
    expect(await podNames()).toEqual(before);
    expectNoFailures(result, 'operator restart');
  });
});

// Faults on the real cluster: the bundled Redis pod deleted (requests follow the route's
// onStoreError policy, and limiting is exact again soon after the new Redis is Ready), and the
// operator pod deleted (it converges again, and no OAuth client secret is generated anew).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Kube } from '../harness/kind/kube.ts';
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
const ns = namespaceFor('faults');
const url = `http://faults.${ns}.svc.cluster.local/healthcheck/ready`;
const STOP = '/tmp/stop-probe';

beforeAll(async () => {
  await deploy(kube, ctx, ns, [
    route(ctx, 'faults', { limits: { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 } }),
    await usersSecret([{ username: 'carol', password: 'carol-e2e-password' }]),
    oauthClient('kept-app', ['https://kept.example/callback']),
  ]);
  await kube.wait(ns, ['oauthclient/kept-app'], 'condition=Ready', 300);
});

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

interface Probe {
  results: Array<{ at: number; status: number; limited: boolean; error?: string }>;
}

/** 8 quick requests for a user never seen: an exact 10-token bucket at 2 per request admits exactly 5. */
async function exactBurst(user: string): Promise<number[]> {
  const { results } = await inCluster<{ results: Array<{ status: number }> }>(
    kube,
    ns,
    'scenario',
    { url, userId: user, count: 8, periodMs: 20 },
  );
  return results.map((r) => r.status);
}

async function redisPod(): Promise<string> {
  return (
    await kube.kubectl([
      '-n',
      ctx.releaseNamespace,
      'get',
      'pods',
      '-l',
      'app.kubernetes.io/component=redis',
      '--field-selector=status.phase=Running',
      '-o',
      'jsonpath={.items[0].metadata.name}',
    ])
  ).trim();
}

describe('faults', () => {
  it('the Redis pod deleted: requests are let through (onStoreError: allow), and limiting is exact again once the new Redis is Ready', async () => {
    expect(await exactBurst('before-outage')).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    const old = await redisPod();
    await kube.exec(ns, CLIENT_POD, ['rm', '-f', STOP]);
    const probe = inCluster<Probe>(
      kube,
      ns,
      'probe',
      { url, periodMs: 100, stopFile: STOP, maxMs: 240_000 },
      300_000,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const deletedAt = Date.now();
    await kube.kubectl(['-n', ctx.releaseNamespace, 'delete', 'pod', old, '--wait=false']);
    // The new Redis pod is Ready when its readiness probe says so; note when the test sees it.
    let readyAt = 0;
    for (;;) {
      const pods = await kube.json<{
        items: Array<{
          metadata: { name: string };
          status: {
            conditions?: Array<{ type: string; status: string; lastTransitionTime: string }>;
          };
        }>;
      }>(['-n', ctx.releaseNamespace, 'get', 'pods', '-l', 'app.kubernetes.io/component=redis']);
      const ready = pods.items.find(
        (p) =>
          p.metadata.name !== old &&
          p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      if (ready) {
        readyAt = Date.parse(
          ready.status.conditions!.find((c) => c.type === 'Ready')!.lastTransitionTime,
        );
        break;
      }
      if (Date.now() - deletedAt > 180_000)
        throw new Error('no new Redis pod became Ready within 180 s');
      await new Promise((r) => setTimeout(r, 500));
    }
    // Keep probing until the limiter has answered for a while after the new Redis is up. The new
    // Redis starts without the namespaces' ACL users, and the NetworkPolicy enforcer has to admit
    // the new pod's address: recovery is bounded below, not expected within the first seconds.
    await new Promise((r) => setTimeout(r, 45_000));
    await kube.exec(ns, CLIENT_POD, ['touch', STOP]);
    const { results } = await probe;

    const during = results.filter((r) => r.at >= deletedAt && !r.limited);
    const failed = results.filter((r) => r.status !== 200);
    // Every request was answered 200: by the store while it was up, by the allow policy while not.
    expect(failed, JSON.stringify(failed.slice(0, 5))).toEqual([]);
    expect(during.length).toBeGreaterThan(0);
    const lastUnlimited = Math.max(...during.map((r) => r.at));
    const back = results.find((r) => r.at > lastUnlimited && r.limited);
    expect(back, 'the limiter answered again after the outage').toBeDefined();
    // Ready's lastTransitionTime has whole-second precision: the difference may be below zero.
    const recoveryMs = back!.at - readyAt;
    const outageMs = lastUnlimited - deletedAt;
    console.log(
      `Redis outage: requests without the limiter for ${outageMs} ms after the delete; limiting again ${recoveryMs} ms after the new Redis was Ready`,
    );
    expect(recoveryMs).toBeLessThan(40_000);
    expect(results.filter((r) => r.at > back!.at).every((r) => r.limited)).toBe(true);

    // A new Redis is empty: buckets start full, and the limiter is exact again.
    expect(await exactBurst('after-outage')).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    writeResult('e2e-redis-outage', {
      title:
        'Bundled Redis pod deleted under a probe (one request every 100 ms, onStoreError: allow)',
      note: "Times in ms. Outage: from the delete to the last request answered without the limiter. Recovery: from the new Redis pod's Ready transition (whole seconds) to the first limited answer.",
      rows: [
        {
          requests: results.length,
          failed: failed.length,
          unlimitedDuringOutage: during.length,
          outageMs,
          recoveryAfterReadyMs: recoveryMs,
        },
      ],
    });
  });

  it('the operator pod deleted: it converges again and the OAuth client secret is not generated anew', async () => {
    const secretBefore = await kube.json<{
      metadata: { uid: string };
      data: Record<string, string>;
    }>(['-n', ns, 'get', 'secret', 'kept-app-oauth-client']);
    const pods = (
      await kube.kubectl([
        '-n',
        ctx.releaseNamespace,
        'get',
        'pods',
        '-l',
        'app.kubernetes.io/component=operator',
        '-o',
        'jsonpath={.items[*].metadata.name}',
      ])
    )
      .trim()
      .split(/\s+/);
    await kube.kubectl(['-n', ctx.releaseNamespace, 'delete', 'pod', ...pods, '--wait=true'], {
      timeoutMs: 120_000,
    });
    await kube.rolloutStatus(ctx.releaseNamespace, `${ctx.release}-operator`);

    // A change made now is reconciled by the new operator: the route's config follows it.
    await kube.kubectl([
      '-n',
      ns,
      'patch',
      'ratelimitroute',
      'faults',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { limiter: { burstCapacity: 12 } } }),
    ]);
    const generation = (
      await kube.json<{ metadata: { generation: number } }>([
        '-n',
        ns,
        'get',
        'ratelimitroute',
        'faults',
      ])
    ).metadata.generation;
    await kube.wait(
      ns,
      ['ratelimitroute/faults'],
      `jsonpath={.status.observedGeneration}=${generation}`,
      180,
    );
    await kube.wait(ns, ['ratelimitroute/faults'], 'condition=Ready', 180);
    const config = await kube.kubectl([
      '-n',
      ns,
      'get',
      'configmap',
      'faults-sidecar',
      '-o',
      'jsonpath={.data.config\\.yaml}',
    ]);
    expect(config).toMatch(/burstCapacity: 12/);

    const secretAfter = await kube.json<{
      metadata: { uid: string };
      data: Record<string, string>;
    }>(['-n', ns, 'get', 'secret', 'kept-app-oauth-client']);
    expect(secretAfter.metadata.uid).toBe(secretBefore.metadata.uid);
    expect(secretAfter.data).toEqual(secretBefore.data);
    await kube.wait(ns, ['oauthclient/kept-app'], 'condition=Ready', 120);
  });
});

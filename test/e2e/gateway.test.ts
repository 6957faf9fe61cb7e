// The gateway on the real cluster: a RateLimitRoute with the specification's end-to-end limits
// (1/10/2) and two replicas, driven from a client pod through the route's Service (cluster DNS,
// kube-proxy), with the bundled Redis holding the buckets.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Kube } from '../harness/kind/kube.ts';
import { deploy, inCluster, namespaceFor, route, routePods } from './support/workloads.ts';
import { SPEC_RULE, specScenario } from './support/scenario.ts';

const ctx = inject('e2e');
const kube = new Kube(ctx);
const ns = namespaceFor('gateway');
const rule = SPEC_RULE;
const service = `http://all.${ns}.svc.cluster.local`;

beforeAll(async () => {
  await deploy(kube, ctx, ns, [route(ctx, 'all', { replicas: 2, limits: rule })]);
});

afterAll(async () => {
  await kube.close();
  await kube.deleteNamespace(ns);
});

describe('RateLimitRoute 1/10/2 on a real cluster', () => {
  it('the Deployment is Ready: both containers Running with probes passing, as non-root on a read-only root filesystem', async () => {
    const pods = await routePods(kube, ns, 'all');
    expect(pods).toHaveLength(2);
    for (const pod of pods) {
      expect(pod.ready).toBe(true);
      expect(pod.containers.map((c) => c.name).sort()).toEqual(['sidecar', 'target']);
      for (const c of pod.containers) {
        expect(c.ready, `${pod.name}/${c.name}`).toBe(true);
        expect(Object.keys(c.state)).toEqual(['running']);
      }
      for (const container of ['target', 'sidecar']) {
        expect((await kube.exec(ns, pod.name, ['id', '-u'], { container })).trim()).not.toBe('0');
        const write = await kube.exec(
          ns,
          pod.name,
          ['sh', '-c', 'touch /probe-write 2>&1 || true'],
          { container },
        );
        expect(write).toMatch(/Read-only file system/);
      }
    }
    const dep = await kube.json<{ status: { readyReplicas?: number; replicas?: number } }>([
      '-n',
      ns,
      'get',
      'deployment',
      'all',
    ]);
    expect(dep.status.readyReplicas).toBe(2);
  });

  it("the specification's scenario through the Service: 30 GETs 0.5 s apart give the exact bucket's 12, with RateLimit headers and Retry-After", async () => {
    const { ok } = await specScenario(kube, ns, `${service}/healthcheck/ready`);
    for (const r of ok) {
      expect(r.headers['ratelimit-limit']).toBe('10');
      expect(Number(r.headers['ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
      expect(r.headers['ratelimit-policy']).toMatch(/^"default";q=10;w=\d+$/);
      expect(r.headers['ratelimit']).toMatch(/^"default";r=\d+;t=\d+$/);
    }
  });

  it('a request without USER-ID is a 400 problem+json, not forwarded', async () => {
    const out = await kube.exec(ns, 'client', [
      'node',
      '-e',
      `fetch(${JSON.stringify(`${service}/healthcheck/ready`)}).then(async (r) => console.log(JSON.stringify({ status: r.status, type: r.headers.get('content-type'), body: await r.json() })))`,
    ]);
    const res = JSON.parse(out) as {
      status: number;
      type: string;
      body: { status: number; title: string; detail?: string };
    };
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(res.body.status).toBe(400);
    expect(res.body.detail ?? res.body.title).toMatch(/USER-ID/);
  });

  it("two replicas share each user's bucket through Redis: a concurrent burst over both pods admits no more than the bucket allows", async () => {
    const pods = await routePods(kube, ns, 'all');
    const decisions = async () => {
      let total = 0;
      let storeErrors = 0;
      const perPod: number[] = [];
      for (const pod of pods) {
        const text = await kube.exec(ns, 'client', [
          'node',
          '-e',
          `fetch('http://${pod.ip}:9090/metrics').then((r) => r.text()).then(console.log)`,
        ]);
        const sum = (metric: string) =>
          [...text.matchAll(new RegExp(`^${metric}\\{[^}]*\\} (\\d+)`, 'gm'))].reduce(
            (s, m) => s + Number(m[1]),
            0,
          );
        const n = sum('portcullis_sidecar_limiter_decisions_total');
        perPod.push(n);
        total += n;
        storeErrors += sum('portcullis_sidecar_store_errors_total');
      }
      return { total, perPod, storeErrors };
    };
    const before = await decisions();
    const burst = await inCluster<{ counts: Record<string, number>; elapsedMs: number }>(
      kube,
      ns,
      'burst',
      {
        url: `${service}/healthcheck/ready`,
        userId: 'burst-user',
        total: 120,
        concurrency: 24,
      },
    );
    const after = await decisions();
    const admitted = burst.counts['200'] ?? 0;
    // Tokens the bucket can have offered between the first request and the last answer, plus one
    // request per limiter store failure: the route's onStoreError is allow, so a take that timed
    // out (50 ms, on a busy node) lets its request through without the shared bucket.
    const storeErrors = after.storeErrors - before.storeErrors;
    const bound =
      Math.floor(
        (rule.burstCapacity + (rule.replenishRate * burst.elapsedMs) / 1000) / rule.requestedTokens,
      ) + storeErrors;
    expect(burst.counts['error'] ?? 0).toBe(0);
    expect(admitted + (burst.counts['429'] ?? 0)).toBe(120);
    expect(admitted).toBeGreaterThanOrEqual(5);
    expect(
      admitted,
      `admitted ${admitted}, bound ${bound} (${storeErrors} store failures) after ${burst.elapsedMs} ms`,
    ).toBeLessThanOrEqual(bound);
    // The store answered for nearly all of the burst: this is a test of the shared bucket.
    expect(storeErrors, `${storeErrors} store failures`).toBeLessThanOrEqual(12);
    // Both pods decided part of the burst, so the agreement came from the shared store.
    const delta = after.perPod.map((n, i) => n - (before.perPod[i] ?? 0));
    expect(
      delta.every((d) => d > 0),
      `decisions per pod: ${delta.join(', ')}`,
    ).toBe(true);
    // Every request was either decided by the shared bucket or let through on a store failure.
    expect(after.total - before.total + storeErrors).toBe(120);
  });
});

// The operator's client-side request rate (client-go's QPS/burst) on a clock the test moves: a burst
// beyond the bucket waits for tokens, callers go in arrival order, an aborted wait leaves the line.
// Through the REST client: every request and list page takes a token, a watch's events take none.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOperatorConfig } from '../../operator/config.ts';
import { createHttpKubeClient } from '../../operator/runtime/http-kube-client.ts';
import {
  createRequestRateLimiter,
  type RequestRateLimiter,
} from '../../operator/runtime/request-rate-limiter.ts';
import { resourceTypes } from '../../operator/runtime/resource-types.ts';
import { flush, ManualClock } from '../harness/manual-clock.ts';

/** Starts `n` waits at once; returns which have resolved so far, in the order they did. */
function startWaits(limiter: RequestRateLimiter, n: number, signal?: AbortSignal): number[] {
  const done: number[] = [];
  for (let i = 0; i < n; i++) void limiter.wait(signal).then(() => done.push(i));
  return done;
}

describe('client-side request rate', () => {
  it('lets a burst of `burst` requests go at once, and makes the ones beyond it wait 1/qps s each', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 20, burst: 40 }, clock);
    const done = startWaits(limiter, 45);
    await flush();
    expect(done).toHaveLength(40);
    expect(limiter.waiting).toBe(5);
    await clock.advance(49);
    expect(done).toHaveLength(40);
    await clock.advance(1); // 50 ms: one token at 20/s
    expect(done).toHaveLength(41);
    await clock.advance(200);
    expect(done).toEqual(Array.from({ length: 45 }, (_, i) => i)); // in arrival order
    expect(limiter.waiting).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('holds the rate over time: 100 requests after the burst take 100/qps s', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 10, burst: 5 }, clock);
    const done = startWaits(limiter, 105);
    await flush();
    expect(done).toHaveLength(5);
    await clock.advance(9_999);
    expect(done).toHaveLength(104);
    await clock.advance(1);
    expect(done).toHaveLength(105);
  });

  it('refills while idle, up to the burst and no further', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 20, burst: 40 }, clock);
    startWaits(limiter, 40);
    await flush();
    await clock.advance(60_000);
    const done = startWaits(limiter, 41);
    await flush();
    expect(done).toHaveLength(40);
  });

  it('an aborted wait leaves the line and resolves; the others keep their turn', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 1, burst: 1 }, clock);
    await limiter.wait();
    const abort = new AbortController();
    const aborted = startWaits(limiter, 1, abort.signal);
    const next = startWaits(limiter, 1);
    abort.abort();
    await flush();
    expect(aborted).toEqual([0]);
    expect(limiter.waiting).toBe(1);
    await clock.advance(1000);
    expect(next).toEqual([0]);
  });
});

describe('the REST client under the request rate', () => {
  let server: Server;
  let url = '';
  let requests = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      requests++;
      res.setHeader('content-type', 'application/json');
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.searchParams.get('watch') === 'true') {
        // Ten events on one long-lived response.
        for (let i = 0; i < 10; i++)
          res.write(
            `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: `s${i}`, namespace: 'a', resourceVersion: String(10 + i) } } })}\n`,
          );
        res.end();
        return;
      }
      // A list of three pages.
      const page = Number(u.searchParams.get('continue') ?? '0');
      res.end(
        JSON.stringify({
          items: [{ metadata: { name: `s${page}`, namespace: 'a' } }],
          metadata: { resourceVersion: '9', continue: page < 2 ? String(page + 1) : '' },
        }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  function client(limiter: RequestRateLimiter) {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    return createHttpKubeClient(kc, { fieldManager: 't', rateLimiter: limiter });
  }

  it('each list page takes a token: a 3-page list on a 2-token bucket waits for the third', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 1, burst: 2 }, clock);
    requests = 0;
    let listed: number | undefined;
    void client(limiter)
      .list(resourceTypes.secret, { namespace: 'a' })
      .then((r) => (listed = r.items.length));
    await waitFor(() => requests === 2 && limiter.waiting === 1);
    expect(listed).toBeUndefined();
    await clock.advance(1000);
    await waitFor(() => listed !== undefined);
    expect(listed).toBe(3);
    expect(requests).toBe(3);
  });

  it('a watch takes one token to open, none per event: ten events on a 1-token bucket all arrive', async () => {
    const clock = new ManualClock();
    const limiter = createRequestRateLimiter({ qps: 1, burst: 1 }, clock);
    const events: string[] = [];
    await client(limiter).watch(
      resourceTypes.secret,
      { namespace: 'a', resourceVersion: '9' },
      (e) => events.push(e.object.metadata.name),
      new AbortController().signal,
    );
    expect(events).toHaveLength(10);
    // The bucket is empty now: the next request waits for the clock.
    const done = startWaits(limiter, 1);
    await flush();
    expect(done).toEqual([]);
    await clock.advance(1000);
    expect(done).toEqual([0]);
  });
});

describe('request rate settings', () => {
  it('default to 20 requests/s with a burst of 40, and refuse zero', () => {
    const config = loadOperatorConfig({});
    expect([config.PORTCULLIS_KUBE_QPS, config.PORTCULLIS_KUBE_BURST]).toEqual([20, 40]);
    expect(
      loadOperatorConfig({}, ['--kube-qps', '50', '--kube-burst', '100']).PORTCULLIS_KUBE_BURST,
    ).toBe(100);
    expect(() => loadOperatorConfig({ PORTCULLIS_KUBE_QPS: '0' })).toThrow(/PORTCULLIS_KUBE_QPS/);
  });
});

/** Real I/O (the local server) completes on its own: turns of the event loop until it did (no timers). */
async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 100_000 && !cond(); i++) await new Promise<void>((r) => setImmediate(r));
  expect(cond()).toBe(true);
}

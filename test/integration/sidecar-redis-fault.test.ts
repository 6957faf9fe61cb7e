// Redis killed (SIGKILL) during traffic. onStoreError allow: no 5xx and no request
// slower than the command timeout plus a margin; deny: 503 problem+json. Both limit again within
// 2 s of Redis returning, and the sidecar never exits. A metric and a warning record the outage.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { describe, expect } from 'vitest';
import { test } from '../harness/fixtures.ts';
import type { RunningSidecar } from '../harness/programs.ts';
import { sleep } from './sidecar-support.ts';

// Short, but not so short that a busy shared machine trips it during normal operation.
const commandTimeoutMs = 300;
/** Generous: the machine is shared and busy; the point is "bounded", not "fast". */
const marginMs = 1000;

interface Sample {
  readonly at: number;
  readonly status: number;
  readonly ms: number;
  readonly limited: boolean; // carried limiter headers: a decision was made
  readonly contentType: string | undefined;
  readonly body: string;
}

const limits = { replenishRate: 1000, burstCapacity: 1000, requestedTokens: 1 };

const it = test
  .extend('common', { scope: 'file' }, ({ userService, redis }) => ({
    upstream: { url: userService.url },
    redis: { url: redis.url, commandTimeoutMs },
  }))
  .extend('allow', { scope: 'file' }, ({ start, common }) =>
    start.sidecar(
      { ...common, route: { id: 'allow' }, limiter: { ...limits, onStoreError: 'allow' } },
      { name: 'sidecar-allow' },
    ),
  )
  .extend('deny', { scope: 'file' }, ({ start, common }) =>
    start.sidecar(
      { ...common, route: { id: 'deny' }, limiter: { ...limits, onStoreError: 'deny' } },
      { name: 'sidecar-deny' },
    ),
  );

describe('Redis killed during traffic', () => {
  /** Sequential traffic against one sidecar until `stop()` says so. */
  function traffic(sidecar: RunningSidecar) {
    const samples: Sample[] = [];
    let running = true;
    const done = (async () => {
      while (running) {
        const t0 = performance.now();
        const res = await request(`${sidecar.url}/healthcheck/ready`, {
          headers: { 'USER-ID': 'fault-user' },
        });
        const body = await res.body.text();
        const ms = performance.now() - t0;
        const ct = res.headers['content-type'];
        samples.push({
          at: t0,
          status: res.statusCode,
          ms,
          limited: res.headers['ratelimit-remaining'] !== undefined,
          contentType: typeof ct === 'string' ? ct : undefined,
          body,
        });
        await sleep(10);
      }
    })();
    return { samples, stop: async () => ((running = false), await done) };
  }

  it('allow: no 5xx, bounded latency; deny: 503 problem+json; both limit again within 2 s of Redis returning', async ({
    redis,
    allow,
    deny,
  }) => {
    const a = traffic(allow);
    const d = traffic(deny);
    await sleep(700);
    const killedAt = performance.now();
    await redis.kill();
    await sleep(2000);
    const restartAt = performance.now();
    await redis.start();
    const restartedAt = performance.now();
    await sleep(3000);
    await a.stop();
    await d.stop();

    const before = (s: Sample[]) => s.filter((x) => x.at + x.ms < killedAt);
    const outage = (s: Sample[]) =>
      s.filter((x) => x.at > killedAt + 100 && x.at + x.ms < restartAt);
    const after = (s: Sample[]) => s.filter((x) => x.at > restartedAt);

    // Before the kill both sidecars were limiting normally.
    for (const s of [a.samples, d.samples]) {
      expect(before(s).length).toBeGreaterThan(3);
      expect(before(s).every((x) => x.status === 200 && x.limited)).toBe(true);
    }

    // allow: every request is forwarded (fail open), none is slow, none is 5xx.
    expect(a.samples.filter((x) => x.status >= 500)).toEqual([]);
    expect(outage(a.samples).length).toBeGreaterThan(3);
    expect(outage(a.samples).every((x) => x.status === 200 && !x.limited)).toBe(true);
    expect(Math.max(...a.samples.map((x) => x.ms))).toBeLessThan(commandTimeoutMs + marginMs);

    // deny: 503 problem+json during the outage.
    expect(outage(d.samples).length).toBeGreaterThan(3);
    for (const x of outage(d.samples)) {
      expect(x.status).toBe(503);
      expect(x.contentType).toBe('application/problem+json');
      expect(JSON.parse(x.body)).toMatchObject({ status: 503, title: 'Service Unavailable' });
    }
    expect(Math.max(...d.samples.map((x) => x.ms))).toBeLessThan(commandTimeoutMs + marginMs);

    // Back to limiting (a decision with limiter headers) within 2 s of Redis returning.
    for (const s of [a.samples, d.samples]) {
      const firstLimited = after(s).find((x) => x.limited && x.status === 200);
      expect(firstLimited).toMatchObject({ limited: true, status: 200 });
      expect(firstLimited!.at - restartedAt).toBeLessThan(2000);
      expect(
        after(s)
          .filter((x) => x.at > firstLimited!.at + 50)
          .every((x) => x.limited && x.status === 200),
      ).toBe(true);
    }

    // Never exited; the outage is visible as a metric and a warning.
    expect(allow.program.exited()).toBe(false);
    expect(deny.program.exited()).toBe(false);
    await allow.program.waitForLine(/"level":40.*limiter store unavailable/);
    const metrics = await (
      await request(`http://127.0.0.1:${allow.adminPort}/metrics`)
    ).body.text();
    expect(metrics).toMatch(
      /portcullis_sidecar_store_errors_total\{route="allow",store="redis"\} [1-9]/,
    );
    expect(metrics).toMatch(
      /portcullis_sidecar_requests_total\{route="allow",outcome="store_error_allowed"\} [1-9]/,
    );
  });

  it('Redis frozen (SIGSTOP, connections stay open): the command timeout bounds every request; readiness follows the policy', async ({
    redis,
    allow,
    deny,
  }) => {
    const probe = new Redis(redis.url);
    const info = await probe.info('server');
    probe.disconnect();
    const pid = Number(/process_id:(\d+)/.exec(info)?.[1]);
    expect(pid).toBeGreaterThan(0);

    const a = traffic(allow);
    const d = traffic(deny);
    await sleep(500);
    const frozenAt = performance.now();
    process.kill(pid, 'SIGSTOP');
    let readyDeny = 0;
    let readyAllow = 0;
    try {
      await sleep(3000);
      readyDeny = (await request(`http://127.0.0.1:${deny.adminPort}/readyz`)).statusCode;
      readyAllow = (await request(`http://127.0.0.1:${allow.adminPort}/readyz`)).statusCode;
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const thawedAt = performance.now();
    await sleep(2500);
    await a.stop();
    await d.stop();

    const frozen = (s: Sample[]) =>
      s.filter((x) => x.at > frozenAt + 100 && x.at + x.ms < thawedAt);
    expect(frozen(a.samples).length).toBeGreaterThan(3);
    expect(frozen(a.samples).every((x) => x.status === 200 && !x.limited)).toBe(true);
    expect(frozen(d.samples).length).toBeGreaterThan(3);
    expect(frozen(d.samples).every((x) => x.status === 503)).toBe(true);
    for (const s of [a.samples, d.samples])
      expect(Math.max(...s.map((x) => x.ms))).toBeLessThan(commandTimeoutMs + marginMs);
    // The connection never dropped, so ioredis still says "ready": readiness stays up for allow;
    // for deny it reflects the store's connection state (docs/concepts/gateway.md, "Admin port").
    expect(readyAllow).toBe(200);
    expect([200, 503]).toContain(readyDeny);
    // Thawed: limiting again.
    for (const s of [a.samples, d.samples]) {
      const back = s.filter((x) => x.at > thawedAt + 2000);
      expect(back.length).toBeGreaterThan(0);
      expect(back.every((x) => x.status === 200 && x.limited)).toBe(true);
    }
  });
});

// Soak finding: a sidecar given 24 config reloads grew 25-85 MiB RSS in 600 s. This pins down that
// reloads (each one a new Redis client and a new upstream pool), Redis restarts and many distinct
// users leave nothing behind: the V8 heap used after a forced full GC stays flat across cycles; and
// the memory store lets go of idle users' buckets once their TTL passed (its sweep, every 10 s).
// The heap is read through the inspector (HeapProfiler.collectGarbage), so the sidecar carries no
// test-only code. Not a timing assertion: a byte margin on live objects after GC.
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { perDescribe, type Starter } from '../harness/fixtures.ts';
import { connectInspector } from '../harness/inspector.ts';
import { freePort } from '../harness/ports.ts';
import type { SidecarConfig } from '../harness/programs.ts';

// HEAP_CYCLES: more cycles for a longer look (the default keeps the file near a minute).
const CYCLES = Number(process.env.HEAP_CYCLES ?? 12);
const WARM_UP = 3;
const USERS_PER_CYCLE = 600;
/** Allowed growth of live heap from the end of warm-up to the last cycle, bytes. */
const MARGIN = 3 * 1024 * 1024;

/** A sidecar in front of an upstream answering OK, its heap read through the inspector. */
async function inspectedSidecar(
  start: Starter,
  config: Omit<SidecarConfig, 'upstream'>,
  name: string,
) {
  const upstream = await start.upstream((_req, res) => res.end('OK'));
  const inspectPort = await freePort();
  const sidecar = await start.sidecar(
    { upstream: { url: upstream.url }, ...config },
    { name, env: { NODE_OPTIONS: `--inspect=127.0.0.1:${inspectPort}` } },
  );
  const inspector = await connectInspector(sidecar.program);
  start.defer(() => inspector.close());
  return { sidecar, inspector };
}

describe('config reloads and Redis restarts do not leak', () => {
  const agent = new Agent({ connections: 16 });
  const stack = perDescribe(async (start) => {
    start.defer(() => agent.close());
    const redis = await start.redis();
    const { sidecar, inspector } = await inspectedSidecar(
      start,
      {
        route: { id: 'heap', path: '/**' },
        limiter: { replenishRate: 100, burstCapacity: 100 },
        redis: { url: redis.url, keyPrefix: 'heap-0:' },
        logLevel: 'info', // 'config reloaded' is an info line
      },
      'sidecar-heap',
    );
    return { redis, sidecar, inspector, base: sidecar.config };
  });

  const drive = async (cycle: number) => {
    let next = 0;
    const worker = async () => {
      while (next < USERS_PER_CYCLE) {
        const user = `user-${cycle}-${next++}`;
        const res = await request(`${stack.sidecar.url}/x`, {
          dispatcher: agent,
          headers: { 'USER-ID': user },
        });
        await res.body.dump();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
  };

  const reloaded = () =>
    stack.sidecar.program.lines.filter((l) => l.includes('"msg":"config reloaded"')).length;

  it(`keeps the heap used after GC flat over ${CYCLES} reload cycles`, async () => {
    const { redis, sidecar, inspector, base } = stack;
    const upstream = base.upstream;
    if (upstream === undefined) throw new Error('the heap stack proxies: it has an upstream');
    const heap: number[] = [];
    const resources: Record<string, number>[] = [];
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      await drive(cycle);
      // Every cycle: a new Redis client (keyPrefix changes) and a new upstream pool (connections).
      const before = reloaded();
      sidecar.write({
        ...base,
        upstream: { ...upstream, connections: 64 + cycle },
        redis: { url: redis.url, keyPrefix: `heap-${cycle}:` },
      });
      const deadline = Date.now() + 15_000;
      while (reloaded() === before && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      expect(reloaded()).toBe(before + 1);
      if (cycle % 3 === 0) {
        await redis.kill();
        await drive(cycle + 1000); // served under onStoreError: allow while Redis is gone
        await redis.start();
      }
      await drive(cycle + 2000);
      heap.push(await inspector.heapUsedAfterGc());
      resources.push(await inspector.activeResources());
    }
    const mib = heap.map((b) => (b / 1024 / 1024).toFixed(2));
    console.log(`heap used after GC per cycle (MiB): ${mib.join(' ')}`);
    const growth = (heap.at(-1) ?? 0) - (heap[WARM_UP - 1] ?? 0);
    expect(
      growth,
      `heap after GC grew ${(growth / 1024 / 1024).toFixed(2)} MiB over ${CYCLES - WARM_UP} cycles: ${mib.join(' ')}`,
    ).toBeLessThan(MARGIN);
    // Handles do not pile up either: a Redis client or pool not closed on reload keeps a socket
    // (TCPSocketWrap) and timers, a watcher an FSEventWrap or StatWatcher. A few sockets come and
    // go with keep-alive, hence the small allowance.
    const total = (r: Record<string, number> | undefined) =>
      Object.values(r ?? {}).reduce((a, b) => a + b, 0);
    console.log(
      `active handles per cycle: ${resources.map(total).join(' ')}; last: ${JSON.stringify(resources.at(-1))}`,
    );
    expect(
      total(resources.at(-1)) - total(resources[WARM_UP - 1]),
      JSON.stringify({ warm: resources[WARM_UP - 1], last: resources.at(-1) }),
    ).toBeLessThanOrEqual(4);
    expect(sidecar.program.exited()).toBe(false);
  }, 240_000);
});

describe('the memory store forgets idle buckets', () => {
  const USERS = 20_000;
  const agent = new Agent({ connections: 16 });
  const stack = perDescribe(async (start) => {
    start.defer(() => agent.close());
    // A bucket refills in 1 s, so its TTL (and the time it may be kept) is a few seconds.
    return inspectedSidecar(
      start,
      {
        route: { id: 'heap-memory', path: '/**' },
        limiter: { replenishRate: 100, burstCapacity: 100 },
        logLevel: 'warn',
      },
      'sidecar-heap-memory',
    );
  });

  const drive = async (prefix: string, count: number) => {
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const res = await request(`${stack.sidecar.url}/x`, {
          dispatcher: agent,
          headers: { 'USER-ID': `${prefix}-${next++}` },
        });
        await res.body.dump();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
  };

  it(`holds ${USERS} distinct users' buckets only until their TTL passed`, async () => {
    const { inspector } = stack;
    await drive('warm', 2000);
    const warm = await inspector.heapUsedAfterGc();
    await drive('many', USERS);
    const loaded = await inspector.heapUsedAfterGc();
    // Eventually (the sweep runs every 10 s): back to the warm heap, give or take 1.5 MiB.
    let after = loaded;
    const deadline = Date.now() + 45_000;
    while (after > warm + 1.5 * 1024 * 1024 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 2000));
      after = await inspector.heapUsedAfterGc();
    }
    const mib = (b: number) => (b / 1024 / 1024).toFixed(2);
    console.log(
      `memory store heap after GC (MiB): warm ${mib(warm)}, after ${USERS} users ${mib(loaded)}, after the sweep ${mib(after)}`,
    );
    expect(
      loaded - warm,
      'the buckets are held while live (else this test measures nothing)',
    ).toBeGreaterThan(1024 * 1024);
    expect(after - warm).toBeLessThan(1.5 * 1024 * 1024);
  }, 120_000);
});

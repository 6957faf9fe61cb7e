// A flood of distinct user ids against a memory-store sidecar with a capped heap. Unbounded, every
// id's bucket stayed for its TTL: ~262,000 ids of 200 bytes in about a minute ran a 128 MiB heap
// out of memory, and the crash lost every bucket. Bounded (memory.maxBuckets, here small so the
// test is short, under a heap cap scaled down to match), the sidecar stays up, its heap stays
// under the cap, and a user drained before the flood is still limited after it: the store refuses
// new ids rather than forget a bucket that has not refilled.
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import { perDescribe } from '../harness/fixtures.ts';
import { connectInspector } from '../harness/inspector.ts';
import { freePort } from '../harness/ports.ts';

/** Heap cap of the sidecar, MiB (the operator gives 128; scaled down with the flood). */
const HEAP_MIB = Number(process.env.FLOOD_HEAP_MIB ?? 40);
/** Distinct ids sent: their buckets (~470 bytes each) overflow HEAP_MIB when all are kept. */
const IDS = Number(process.env.FLOOD_IDS ?? 60_000);
const MAX_BUCKETS = 5000;

describe('a flood of distinct user ids against the memory store', () => {
  const agent = new Agent({ connections: 16, pipelining: 4 });
  const stack = perDescribe(async (start) => {
    start.defer(() => agent.close());
    const upstream = await start.upstream((_req, res) => res.end('OK'));
    const inspectPort = await freePort();
    const sidecar = await start.sidecar(
      {
        upstream: { url: upstream.url },
        route: { id: 'flood-memory', path: '/**' },
        // Ten requests drain a bucket, and one request's tokens take 1000 s to come back: no
        // bucket refills, nor may be forgotten, while the test runs (the flood took 171 s on a
        // machine loaded sixfold, past a 100 s refill, and then forgotten buckets made room).
        limiter: { replenishRate: 1, burstCapacity: 10_000, requestedTokens: 1000 },
        memory: { maxBuckets: MAX_BUCKETS },
        logLevel: 'warn',
      },
      {
        name: 'sidecar-memory-bound',
        env: {
          NODE_OPTIONS: `--max-old-space-size=${HEAP_MIB} --inspect=127.0.0.1:${inspectPort}`,
        },
      },
    );
    const inspector = await connectInspector(sidecar.program);
    start.defer(() => inspector.close());
    return { sidecar, inspector };
  });

  const get = async (user: string) => {
    const res = await request(`${stack.sidecar.url}/x`, {
      dispatcher: agent,
      headers: { 'USER-ID': user },
    });
    await res.body.dump();
    return res.statusCode;
  };

  it(`stays up under ${HEAP_MIB} MiB, and a drained user stays limited`, async () => {
    const { sidecar, inspector } = stack;
    for (let i = 0; i < 10; i++) expect(await get('drained')).toBe(200);
    expect(await get('drained')).toBe(429);

    const statuses = new Map<number, number>();
    let next = 0;
    let failed: unknown;
    const worker = async () => {
      while (next < IDS && failed === undefined) {
        const id = `${String(next++).padStart(8, '0')}-${'f'.repeat(240)}`;
        try {
          const s = await get(id);
          statuses.set(s, (statuses.get(s) ?? 0) + 1);
        } catch (err) {
          failed = err; // the sidecar went away
        }
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    console.log(`flood of ${IDS} ids: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(failed, `the sidecar stopped answering: ${String(failed)}`).toBeUndefined();
    expect(sidecar.program.exited()).toBe(false);
    expect(statuses.get(200)).toBe(MAX_BUCKETS - 1); // 'drained' holds one bucket
    expect(statuses.get(429)).toBe(IDS - (MAX_BUCKETS - 1));

    const heap = await inspector.heapUsedAfterGc();
    console.log(`heap used after GC: ${(heap / 1024 / 1024).toFixed(1)} MiB (cap ${HEAP_MIB})`);
    expect(heap).toBeLessThan(HEAP_MIB * 1024 * 1024);
    expect(await get('drained')).toBe(429);

    const metrics = await (
      await request(`http://127.0.0.1:${sidecar.adminPort}/metrics`)
    ).body.text();
    expect(metrics).toContain(
      `portcullis_sidecar_store_full_refusals_total ${IDS - (MAX_BUCKETS - 1)}`,
    );
  }, 180_000);
});

// A minimal Chrome DevTools Protocol client for a child process started with `--inspect`: lets a
// test force a full GC in the child and read its V8 heap, without any test-only code in the
// program itself (Node 24's global WebSocket; HeapProfiler.collectGarbage, Runtime.getHeapUsage),
// and sample what it allocates (HeapProfiler.startSampling/stopSampling).
import type { Program } from './programs.ts';

/** A node of V8's sampling heap profile (HeapProfiler.SamplingHeapProfile). */
export interface AllocationNode {
  readonly callFrame: {
    readonly functionName: string;
    readonly url: string;
    readonly lineNumber: number;
  };
  readonly selfSize: number;
  readonly children: readonly AllocationNode[];
}

export interface Inspector {
  /** Forces full GCs in the child, then returns its V8 heap used, bytes. */
  heapUsedAfterGc(): Promise<number>;
  /** The child's process.getActiveResourcesInfo() counted by kind (sockets, timers, watchers). */
  activeResources(): Promise<Record<string, number>>;
  /**
   * Samples the child's allocations (one sample per `intervalBytes` on average) while `during`
   * runs, garbage included: the samples of objects the GC collected are kept.
   */
  sampleAllocations<T>(
    intervalBytes: number,
    during: () => Promise<T>,
  ): Promise<{ result: T; head: AllocationNode }>;
  close(): void;
}

/** Connects to a program started with NODE_OPTIONS=--inspect=127.0.0.1:PORT. */
export async function connectInspector(program: Program): Promise<Inspector> {
  const line = await program.waitForLine(/Debugger listening on ws:\/\//, 15_000);
  const url = /ws:\/\/\S+/.exec(line)?.[0];
  if (url === undefined) throw new Error(`no inspector URL in: ${line}`);
  const ws = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve(), { once: true });
    ws.addEventListener('error', () => reject(new Error(`cannot connect to ${url}`)), {
      once: true,
    });
  });
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener('message', (event) => {
    const msg = JSON.parse(String(event.data)) as {
      id?: number;
      result?: unknown;
      error?: { message: string };
    };
    if (msg.id === undefined) return;
    const w = waiting.get(msg.id);
    waiting.delete(msg.id);
    if (msg.error !== undefined) w?.reject(new Error(msg.error.message));
    else w?.resolve(msg.result);
  });
  const call = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    async heapUsedAfterGc() {
      // Several passes: weak references and finalizers released by one GC free more in the next.
      for (let i = 0; i < 3; i++) await call('HeapProfiler.collectGarbage');
      const usage = (await call('Runtime.getHeapUsage')) as { usedSize: number };
      return usage.usedSize;
    },
    async activeResources() {
      const expression = 'JSON.stringify(process.getActiveResourcesInfo())';
      const reply = (await call('Runtime.evaluate', { expression, returnByValue: true })) as {
        result: { value?: unknown };
      };
      const kinds: unknown = JSON.parse(String(reply.result.value));
      const counts: Record<string, number> = {};
      if (Array.isArray(kinds))
        for (const k of kinds) counts[String(k)] = (counts[String(k)] ?? 0) + 1;
      return counts;
    },
    async sampleAllocations(intervalBytes, during) {
      await call('HeapProfiler.enable');
      await call('HeapProfiler.startSampling', {
        samplingInterval: intervalBytes,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true,
      });
      const result = await during();
      const { profile } = (await call('HeapProfiler.stopSampling')) as {
        profile: { head: AllocationNode };
      };
      return { result, head: profile.head };
    },
    close: () => ws.close(),
  };
}

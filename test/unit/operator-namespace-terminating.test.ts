// A namespace being deleted refuses every write with 403 and the cause NamespaceTerminating (seen
// on a real cluster whenever a namespace with routes is deleted). The object goes with its
// namespace: a reconcile that meets this is done, not failed: no retry, no warning, and an
// event that cannot be recorded there is no warning either. Any other 403 still is.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { Controller } from '../../operator/runtime/controller.ts';
import { KubeApiError } from '../../operator/runtime/errors.ts';
import { createEventRecorder } from '../../operator/runtime/events.ts';
import { MemoryKubeClient } from '../harness/memory-kube-client.ts';
import { createMetrics } from '../../operator/runtime/metrics.ts';
import { flush, ManualClock } from '../harness/manual-clock.ts';

const terminating = () =>
  new KubeApiError(
    403,
    'PATCH deployments/all: 403 unable to create new content in namespace e2e because it is being terminated',
    'Forbidden',
    ['NamespaceTerminating'],
  );

function logged() {
  const lines: Array<{ level: number; msg: string }> = [];
  const log = pino(
    { level: 'debug' },
    { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) },
  );
  return { lines, log };
}

async function runOnce(error: Error) {
  const { lines, log } = logged();
  const clock = new ManualClock();
  let calls = 0;
  const controller = new Controller(
    {
      reconciler: {
        name: 'test',
        reconcile: async () => {
          calls++;
          throw error;
        },
      },
      workers: 1,
      backoff: { baseMs: 100, maxMs: 100 },
      keys: () => ['e2e/all'],
      resyncIntervalMs: 0,
    },
    clock,
    log,
    createMetrics({ defaultMetrics: false }),
  );
  controller.start();
  await flush();
  await clock.advance(1000);
  await flush();
  await controller.stop();
  return {
    calls,
    warnings: lines.filter((l) => l.level >= 40),
    failures: controller.queue.failures('e2e/all'),
  };
}

describe('a namespace being deleted', () => {
  it('a reconcile refused with NamespaceTerminating is done: not retried, not a warning', async () => {
    const r = await runOnce(terminating());
    expect(r.calls).toBe(1);
    expect(r.failures).toBe(0);
    expect(r.warnings).toEqual([]);
  });

  it('any other 403 is still retried with backoff and logged as a warning', async () => {
    const r = await runOnce(new KubeApiError(403, 'forbidden by RBAC', 'Forbidden'));
    expect(r.calls).toBeGreaterThan(1);
    expect(r.warnings.length).toBeGreaterThan(0);
  });

  it('an event refused with NamespaceTerminating is not a warning', async () => {
    const { lines, log } = logged();
    const client = new MemoryKubeClient();
    client.failNext('create', terminating());
    const recorder = createEventRecorder(client, new ManualClock(), log, 'test');
    recorder.event(
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'e2e', uid: 'u1' } },
      'Warning',
      'ApplyFailed',
      'x',
    );
    await flush();
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    expect(lines.some((l) => /namespace is being deleted/.test(l.msg))).toBe(true);
  });
});

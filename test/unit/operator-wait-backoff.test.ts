// A reconcile waiting on something no event announces (a foreign object, a team's rollout) is
// looked at again less often each time, not on a fixed 10 s or 30 s beat: a namespace full of
// routes stuck for good costs the API server less and less. Anything else resets the pace.
import { describe, expect, it } from 'vitest';
import { Controller, type ReconcileResult } from '../../operator/runtime/controller.ts';
import { createMetrics } from '../../operator/runtime/metrics.ts';
import { ManualClock, flush } from '../harness/manual-clock.ts';
import { silent } from './operator-fixtures.ts';

function controllerWith(results: () => ReconcileResult) {
  const clock = new ManualClock();
  const at: number[] = [];
  const controller = new Controller(
    {
      reconciler: {
        name: 'test',
        reconcile: async () => {
          at.push(clock.now());
          return results();
        },
      },
      workers: 1,
      backoff: { baseMs: 100, maxMs: 1000 },
      keys: () => ['ns/a'],
      resyncIntervalMs: 0,
      waitBackoff: { baseMs: 5000, maxMs: 20_000 },
    },
    clock,
    silent,
    createMetrics(),
  );
  return { clock, at, controller };
}

async function advance(clock: ManualClock, ms: number): Promise<void> {
  for (let t = 0; t < ms; t += 1000) {
    await clock.advance(1000);
    await flush();
  }
}

describe('waiting reconciles back off', () => {
  it('5 s, 10 s, 20 s, then 20 s (the cap) between looks', async () => {
    const { clock, at, controller } = controllerWith(() => ({ waiting: true }));
    controller.start();
    await flush();
    await advance(clock, 60_000);
    await controller.stop();
    const gaps = at.slice(1).map((t, i) => t - (at[i] ?? 0));
    expect(gaps.slice(0, 4)).toEqual([5000, 10_000, 20_000, 20_000]);
  });

  it('a reconcile that is not waiting resets the pace', async () => {
    let n = 0;
    const { clock, at, controller } = controllerWith(() => (++n === 3 ? {} : { waiting: true }));
    controller.start();
    await flush();
    await advance(clock, 20_000);
    expect(at.length).toBe(3); // 0, 5 s, 15 s; the third is not waiting
    controller.enqueue('ns/a');
    await flush();
    const again = clock.now();
    await advance(clock, 6000);
    await controller.stop();
    expect(at[4]! - again).toBe(5000);
  });
});

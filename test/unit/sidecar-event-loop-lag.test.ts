// The sidecar's event-loop delay gauges: sampled every 100 ms (not prom-client's 10 ms), with the
// sampling interval taken out, so an idle loop reads ~0 and a stall reads its own length beyond
// the interval; the names are prom-client's, each exposed once.
import { describe, expect, it } from 'vitest';
import { EVENT_LOOP_SAMPLE_MS } from '../../sidecar/event-loop-lag.ts';
import { SidecarMetrics } from '../../sidecar/metrics.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function gauge(text: string, stat: string): number {
  const m = new RegExp(
    `^portcullis_sidecar_nodejs_eventloop_lag_${stat}_seconds (\\S+)$`,
    'm',
  ).exec(text);
  if (m === null) throw new Error(`no ${stat} gauge in the exposition`);
  return Number(m[1]);
}

describe('sidecar event-loop delay gauges', () => {
  it('read the delay beyond the sampling interval: ~0 when idle, the stall when blocked', async () => {
    const metrics = new SidecarMetrics();
    await sleep(5 * EVENT_LOOP_SAMPLE_MS);
    const idle = await metrics.registry.metrics();
    for (const stat of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99']) {
      expect(
        idle.match(
          new RegExp(
            `^# TYPE portcullis_sidecar_nodejs_eventloop_lag_${stat}_seconds gauge$`,
            'gm',
          ),
        ),
      ).toHaveLength(1);
    }
    // Raw samples are whole intervals (>= 0.1 s each); with the interval taken out an idle loop's
    // typical sample is far below it.
    expect(gauge(idle, 'p50')).toBeLessThan(EVENT_LOOP_SAMPLE_MS / 1000 / 2);
    expect(gauge(idle, 'min')).toBeLessThan(EVENT_LOOP_SAMPLE_MS / 1000 / 2);

    // A scrape starts the histogram anew, and Node's histogram records no sample until its timer
    // has fired once after that; then block the loop for 2.5 intervals: the next sample comes
    // >= 250 ms after the previous one.
    await sleep(1.5 * EVENT_LOOP_SAMPLE_MS);
    const until = performance.now() + 2.5 * EVENT_LOOP_SAMPLE_MS;
    while (performance.now() < until) {
      // busy: the timer cannot fire
    }
    await sleep(2 * EVENT_LOOP_SAMPLE_MS);
    const blockedMax = gauge(await metrics.registry.metrics(), 'max');
    expect(blockedMax).toBeGreaterThanOrEqual((1.5 * EVENT_LOOP_SAMPLE_MS - 5) / 1000);
    // Each scrape covers the time since the previous one: the stall is not in the next window.
    await sleep(3 * EVENT_LOOP_SAMPLE_MS);
    expect(gauge(await metrics.registry.metrics(), 'max')).toBeLessThan(blockedMax);
  });
});

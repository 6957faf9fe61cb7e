// The event-loop delay gauges of prom-client's default metrics (nodejs_eventloop_lag_{min,max,
// mean,stddev,p50,p90,p99}_seconds), sampled every EVENT_LOOP_SAMPLE_MS instead of every 10 ms.
// prom-client samples with monitorEventLoopDelay at 10 ms: a timer that wakes an idle sidecar 100
// times a second (0.5 s of CPU a minute per pod with no traffic; docs/reference/performance.md). monitorEventLoopDelay records the whole time between two samples, so a coarser
// resolution would also move every value's baseline (an idle loop would read ~0.1 s); these gauges
// take the sampling interval out and report the delay beyond it, which is the loop's lag whatever
// the resolution. Like prom-client's, they cover the time since the previous scrape.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/** How often the event loop is sampled, ms. */
export const EVENT_LOOP_SAMPLE_MS = 100;

const names = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const;
type Stat = (typeof names)[number];

const help: Record<Stat, string> = {
  min: 'The minimum recorded event loop delay.',
  max: 'The maximum recorded event loop delay.',
  mean: 'The mean of the recorded event loop delays.',
  stddev: 'The standard deviation of the recorded event loop delays.',
  p50: 'The 50th percentile of the recorded event loop delays.',
  p90: 'The 90th percentile of the recorded event loop delays.',
  p99: 'The 99th percentile of the recorded event loop delays.',
};

/**
 * Replaces prom-client's event-loop delay gauges in `registry` (registered by collectDefaultMetrics
 * with `prefix`) with gauges of the same names fed at EVENT_LOOP_SAMPLE_MS.
 */
export function replaceEventLoopDelayGauges(registry: Registry, prefix: string): void {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_MS });
  histogram.enable();
  const intervalS = EVENT_LOOP_SAMPLE_MS / 1000;
  const lag = (ns: number) => Math.max(0, ns / 1e9 - intervalS);
  const read: Record<Stat, () => number> = {
    min: () => lag(histogram.min),
    max: () => lag(histogram.max),
    mean: () => lag(histogram.mean),
    stddev: () => histogram.stddev / 1e9,
    p50: () => lag(histogram.percentile(50)),
    p90: () => lag(histogram.percentile(90)),
    p99: () => lag(histogram.percentile(99)),
  };
  const gauges = {} as Record<Stat, Gauge>;
  for (const stat of names) {
    const name = `${prefix}nodejs_eventloop_lag_${stat}_seconds`;
    registry.removeSingleMetric(name);
    gauges[stat] = new Gauge({
      name,
      help: `${help[stat]} Beyond the ${EVENT_LOOP_SAMPLE_MS} ms sampling interval, since the previous scrape.`,
      registers: [registry],
      // One snapshot for all seven: the first gauge read at a scrape sets them and starts anew.
      ...(stat === 'min'
        ? {
            collect: () => {
              // No sample since the last scrape (scrapes closer than the interval): keep the values.
              if (histogram.count === 0) return;
              for (const s of names) gauges[s].set(read[s]());
              histogram.reset();
            },
          }
        : {}),
    });
  }
}

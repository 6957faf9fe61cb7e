// The request path's metric series (sidecar/hot-metrics.ts) against prom-client's own Counter and
// Histogram: the same updates must give the same /metrics text and the same JSON, scrape after
// scrape, and a registry reset must clear both alike.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../../sidecar/hot-metrics.ts';

const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1];

function pair() {
  const hot = new Registry();
  const ref = new Registry();
  const counter = {
    name: 'test_requests_total',
    help: 'Requests by route and outcome',
    labelNames: ['route', 'outcome'] as const,
  };
  const histogram = {
    name: 'test_duration_seconds',
    help: 'Duration, seconds',
    labelNames: ['route'] as const,
    buckets,
  };
  return {
    hot,
    ref,
    hotCounter: new HotCounter({ ...counter, registers: [hot] }),
    refCounter: new Counter({ ...counter, registers: [ref] }),
    hotHistogram: new HotHistogram({ ...histogram, registers: [hot] }),
    refHistogram: new Histogram({ ...histogram, registers: [ref] }),
  };
}

async function expectSame(hot: Registry, ref: Registry) {
  const text = await hot.metrics();
  expect(text).toBe(await ref.metrics());
  expect(await hot.getMetricsAsJSON()).toEqual(await ref.getMetricsAsJSON());
  return text;
}

describe('hot metric series', () => {
  it('a counter series writes what prom-client writes, and counts carry across scrapes', async () => {
    const p = pair();
    const a = p.hotCounter.labels('r1', 'forwarded');
    const b = p.hotCounter.labels('r1', 'limited');
    const c = p.hotCounter.labels('r 2 "quoted"', 'forwarded');
    for (let i = 0; i < 5; i++) a.inc();
    b.inc();
    for (let i = 0; i < 3; i++) c.inc();
    p.refCounter.inc({ route: 'r1', outcome: 'forwarded' }, 5);
    p.refCounter.inc({ route: 'r1', outcome: 'limited' }, 1);
    p.refCounter.inc({ route: 'r 2 "quoted"', outcome: 'forwarded' }, 3);
    const first = await expectSame(p.hot, p.ref);
    expect(first).toContain('test_requests_total{route="r1",outcome="forwarded"} 5');

    // Between scrapes: the same label values give the same series; totals keep growing.
    expect(p.hotCounter.labels('r1', 'forwarded')).toBe(a);
    for (let i = 0; i < 7; i++) p.hotCounter.labels('r1', 'forwarded').inc();
    p.refCounter.inc({ route: 'r1', outcome: 'forwarded' }, 7);
    const second = await expectSame(p.hot, p.ref);
    expect(second).toContain('test_requests_total{route="r1",outcome="forwarded"} 12');
  });

  it('a series nobody incremented is not written (as with prom-client)', async () => {
    const p = pair();
    p.hotCounter.labels('r1', 'bad_key');
    p.hotHistogram.labels('r1');
    const text = await expectSame(p.hot, p.ref);
    expect(text).not.toContain('bad_key');
    expect(text).not.toContain('test_duration_seconds_count');
  });

  it('a histogram series buckets, sums and counts as prom-client does, bounds inclusive', async () => {
    const p = pair();
    // On a bound, between bounds, below the first, above the last, zero.
    const values = [0.0005, 0.0007, 0.001, 0.0001, 0, 0.003, 0.01, 0.5, 1, 1.0001, 42, 0.0049];
    // Made in the order of their first observation, the order prom-client writes its series in.
    const r2 = p.hotHistogram.labels('r2');
    const r1 = p.hotHistogram.labels('r1');
    values.forEach((v, i) => {
      (i % 3 === 0 ? r2 : r1).observe(v);
      p.refHistogram.observe({ route: i % 3 === 0 ? 'r2' : 'r1' }, v);
    });
    const text = await expectSame(p.hot, p.ref);
    expect(text).toContain('test_duration_seconds_bucket{le="0.001",route="r1"} 3');
    expect(text).toContain('test_duration_seconds_bucket{le="+Inf",route="r2"} 4');

    // And again after more observations.
    for (const v of [0.002, 0.02, 3]) {
      r1.observe(v);
      p.refHistogram.observe({ route: 'r1' }, v);
    }
    await expectSame(p.hot, p.ref);
  });

  it('ignores a value with no bucket instead of throwing on the request path', async () => {
    const p = pair();
    const s = p.hotHistogram.labels('r1');
    s.observe(0.002);
    s.observe(Number.NaN);
    s.observe(Number.POSITIVE_INFINITY);
    p.refHistogram.observe({ route: 'r1' }, 0.002);
    expect(() => p.refHistogram.observe({ route: 'r1' }, Number.NaN)).toThrow(TypeError);
    const text = await expectSame(p.hot, p.ref);
    expect(text).toContain('test_duration_seconds_count{route="r1"} 1');
  });

  it('a registry reset clears both kinds, and counting goes on after it', async () => {
    const p = pair();
    const c = p.hotCounter.labels('r1', 'forwarded');
    const h = p.hotHistogram.labels('r1');
    c.inc();
    h.observe(0.003);
    p.refCounter.inc({ route: 'r1', outcome: 'forwarded' });
    p.refHistogram.observe({ route: 'r1' }, 0.003);
    await expectSame(p.hot, p.ref);
    p.hot.resetMetrics();
    p.ref.resetMetrics();
    const cleared = await expectSame(p.hot, p.ref);
    expect(cleared).not.toContain('route="r1"');
    c.inc();
    h.observe(0.2);
    p.refCounter.inc({ route: 'r1', outcome: 'forwarded' });
    p.refHistogram.observe({ route: 'r1' }, 0.2);
    await expectSame(p.hot, p.ref);
  });

  it('refuses a wrong number of label values, unordered buckets and a second metric of the same name', () => {
    const p = pair();
    expect(() => p.hotCounter.labels('only-one')).toThrow(/expected 2 label values, got 1/);
    expect(() => p.hotHistogram.labels('a', 'b')).toThrow(/expected 1 label values, got 2/);
    expect(
      () =>
        new HotHistogram({
          name: 'x_seconds',
          help: 'x',
          labelNames: [],
          buckets: [0.1, 0.1],
          registers: [],
        }),
    ).toThrow(/strictly increasing/);
    expect(
      () =>
        new HotHistogram({
          name: 'y_seconds',
          help: 'y',
          labelNames: [],
          buckets: [],
          registers: [],
        }),
    ).toThrow(/strictly increasing/);
    expect(
      () =>
        new HotHistogram({
          name: 'test_duration_seconds',
          help: 'again',
          labelNames: ['route'],
          buckets,
          registers: [p.hot],
        }),
    ).toThrow(/already been registered/);
  });
});

// Metric series for the request path: updated with a field write (counters) or a bucket search
// (histograms), and read by prom-client when the registry is collected (each /metrics scrape).
// The names, types, labels and text are what prom-client's own Counter and Histogram write for
// the same updates (test/unit/sidecar-hot-metrics.test.ts holds them side by side).
import {
  Counter,
  type LabelValues,
  type Metric,
  type MetricValueWithName,
  type Registry,
} from 'prom-client';

/** One counter series, as the proxy holds it. */
export interface CounterSeries {
  inc(): void;
}

/** One histogram series, as the proxy holds it. */
export interface HistogramSeries {
  /** Records one value (non-finite values are ignored: they have no bucket). */
  observe(value: number): void;
}

interface HotConfig<T extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly T[];
  readonly registers: readonly Registry[];
}

/**
 * The series of `series` for these label values, made by `make` the first time (one object per
 * distinct values, kept for the process's life, as prom-client keeps its series). A wrong number of
 * values is a programming error and throws.
 */
function seriesFor<T extends string, S>(
  series: Map<string, S>,
  config: Pick<HotConfig<T>, 'name' | 'labelNames'>,
  values: readonly string[],
  make: (labels: Record<T, string>) => S,
): S {
  const key = values.join('\u0000');
  let s = series.get(key);
  if (s === undefined) {
    const names = config.labelNames;
    if (values.length !== names.length)
      throw new Error(
        `${config.name}: expected ${names.length} label values, got ${values.length}`,
      );
    const labels = {} as Record<T, string>;
    names.forEach((n, i) => (labels[n] = values[i] as string));
    s = make(labels);
    series.set(key, s);
  }
  return s;
}

class PendingCount<T extends string> implements CounterSeries {
  readonly labels: LabelValues<T>;
  n = 0;

  constructor(labels: LabelValues<T>) {
    this.labels = labels;
  }

  inc(): void {
    this.n++;
  }
}

/**
 * A prom-client Counter whose series count in a plain field. The counts move into the Counter in
 * its collect hook, so its exposition, JSON and reset are prom-client's own.
 */
export class HotCounter<T extends string> {
  readonly counter: Counter<T>;
  readonly #config: HotConfig<T>;
  readonly #series = new Map<string, PendingCount<T>>();

  constructor(config: HotConfig<T>) {
    this.#config = config;
    const series = this.#series;
    this.counter = new Counter<T>({
      name: config.name,
      help: config.help,
      labelNames: config.labelNames,
      registers: [...config.registers],
      collect(this: Counter<T>) {
        for (const s of series.values()) {
          if (s.n === 0) continue;
          this.inc(s.labels, s.n);
          s.n = 0;
        }
      },
    });
  }

  labels(...values: string[]): CounterSeries {
    return seriesFor(
      this.#series,
      this.#config,
      values,
      (labels) => new PendingCount<T>(labels as LabelValues<T>),
    );
  }
}

class Buckets implements HistogramSeries {
  readonly labels: Record<string, string>;
  readonly bounds: Float64Array;
  /** Observations per bucket, not cumulative; the last slot holds those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Record<string, string>, bounds: Float64Array) {
    this.labels = labels;
    this.bounds = bounds;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    (this.counts[i] as number)++;
    this.sum += value;
    this.count++;
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

interface PromValue extends MetricValueWithName<string> {
  readonly sharedLabels?: Record<string, string>;
  readonly exemplar?: null;
}

/**
 * A histogram that registers itself in prom-client registries as a metric (name, help, type, get,
 * reset: what a Registry asks of one) and keeps its series in typed arrays. A series appears once
 * it has an observation, as with prom-client's Histogram; series are written in the order they were
 * made (the sidecar makes a route's series when the route loads), where prom-client writes them in
 * the order of their first observation.
 */
export class HotHistogram<T extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly T[];
  readonly #bounds: Float64Array;
  readonly #series = new Map<string, Buckets>();

  constructor(config: HotConfig<T> & { readonly buckets: readonly number[] }) {
    const bounds = config.buckets;
    if (
      bounds.length === 0 ||
      bounds.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= (bounds[i - 1] as number)))
    ) {
      throw new Error(`${config.name}: buckets must be finite and strictly increasing`);
    }
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.#bounds = Float64Array.from(bounds);
    // A Registry reads a metric through name, type, get()/getForPromString() and reset(); the cast
    // is because prom-client types registerMetric() with its own four classes.
    for (const r of config.registers) r.registerMetric(this as unknown as Metric<T>);
  }

  labels(...values: string[]): HistogramSeries {
    return seriesFor(this.#series, this, values, (labels) => new Buckets(labels, this.#bounds));
  }

  reset(): void {
    for (const s of this.#series.values()) s.clear();
  }

  /** The values as prom-client's Histogram hands them to the text format (series labels shared). */
  async getForPromString(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    values: PromValue[];
    aggregator: 'sum';
  }> {
    const values: PromValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const s of this.#series.values()) {
      if (s.count === 0) continue;
      let acc = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        acc += s.counts[i] as number;
        values.push({
          labels: { le: this.#bounds[i] as number },
          sharedLabels: s.labels,
          value: acc,
          metricName: bucketName,
          exemplar: null,
        });
      }
      values.push(
        {
          labels: { le: '+Inf' },
          sharedLabels: s.labels,
          value: s.count,
          metricName: bucketName,
          exemplar: null,
        },
        {
          labels: {},
          sharedLabels: s.labels,
          value: s.sum,
          metricName: `${this.name}_sum`,
          exemplar: undefined,
        },
        {
          labels: {},
          sharedLabels: s.labels,
          value: s.count,
          metricName: `${this.name}_count`,
          exemplar: undefined,
        },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    };
  }

  /** The values with each series' labels merged in (Registry.getMetricsAsJSON). */
  async get(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    values: MetricValueWithName<string>[];
    aggregator: 'sum';
  }> {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...rest }) => ({
        ...rest,
        labels: { ...labels, ...sharedLabels },
      })),
    };
  }
}

// Prometheus metrics of the sidecar (prom-client), on its own registry, served on the admin port.
// The four updates every proxied request makes (its outcome, the limiter's decision, the store's
// and the whole proxy's duration) go to "hot" series: a counter child is a field increment and a
// histogram series a bucket search, and prom-client reads them when /metrics is scraped.
// prom-client's own children build a label hash string, validate the labels and look the series
// up by that string on every call: under callgrind those four calls cost ~30 k of the sidecar's
// ~230 k instructions per request, the hot series ~4 k (docs/reference/performance.md, the optimisations table).
// The exposition is the text prom-client writes for the same updates
// (test/unit/sidecar-hot-metrics.test.ts).
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import { replaceEventLoopDelayGauges } from './event-loop-lag.ts';
import { HotCounter, HotHistogram, type CounterSeries } from './hot-metrics.ts';

const METRIC_PREFIX = 'portcullis_sidecar_';

export type Outcome =
  | 'forwarded'
  | 'limited'
  | 'bad_key'
  | 'key_unavailable'
  | 'no_route'
  | 'bad_request'
  | 'store_error_allowed'
  | 'store_error_denied'
  | 'overloaded'
  | 'key_in_flight'
  | 'upstream_error';

export class SidecarMetrics {
  readonly registry = new Registry();
  readonly requests = new HotCounter({
    name: 'portcullis_sidecar_requests_total',
    help: 'Requests by route and outcome',
    labelNames: ['route', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly decisions = new HotCounter({
    name: 'portcullis_sidecar_limiter_decisions_total',
    help: 'Token-bucket decisions by route, rule and decision; shadow="true" for rules that decide without refusing (a limited one was forwarded)',
    labelNames: ['route', 'rule', 'decision', 'shadow'] as const,
    registers: [this.registry],
  });
  readonly storeErrors = new Counter({
    name: 'portcullis_sidecar_store_errors_total',
    help: 'Limiter store failures (timeout, connection down) by route and store',
    labelNames: ['route', 'store'] as const,
    registers: [this.registry],
  });
  readonly localRefusals = new Counter({
    name: 'portcullis_sidecar_store_local_refusals_total',
    help: 'Takes the sidecar refused without asking Redis: Redis had refused the same take moments before, and its bucket cannot have refilled since (also counted as limited decisions)',
    registers: [this.registry],
  });
  readonly storeEvictions = new Counter({
    name: 'portcullis_sidecar_store_evictions_total',
    help: 'Buckets the memory store forgot to stay within memory.maxBuckets and memory.maxBytes (each had refilled to full, so no decision changed)',
    registers: [this.registry],
  });
  readonly storeFullRefusals = new Counter({
    name: 'portcullis_sidecar_store_full_refusals_total',
    help: 'Requests refused with 429 because the memory store was at its bound and no bucket had refilled to full (a new key would have been admitted unmetered)',
    registers: [this.registry],
  });
  readonly storeDuration = new HotHistogram({
    name: 'portcullis_sidecar_store_duration_seconds',
    help: 'Time for one limiter decision from the store, seconds',
    labelNames: ['store'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [this.registry],
  });
  readonly proxyDuration = new HotHistogram({
    name: 'portcullis_sidecar_proxy_duration_seconds',
    help: 'Time from request to the end of the upstream response, seconds',
    labelNames: ['route'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly forwardDuration = new HotHistogram({
    name: 'portcullis_sidecar_forward_duration_seconds',
    help: 'Time from the request reaching the sidecar until it is sent upstream (key, limiter decision, headers): the latency the gateway adds before the service sees the request, seconds',
    labelNames: ['route'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    registers: [this.registry],
  });
  readonly reloads = new Counter({
    name: 'portcullis_sidecar_config_reloads_total',
    help: 'Config file reloads by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) {
      // prom-client's own event-loop sampler is left to wake once a minute: its gauges are replaced.
      collectDefaultMetrics({
        register: this.registry,
        prefix: METRIC_PREFIX,
        eventLoopMonitoringPrecision: 60_000,
      });
      replaceEventLoopDelayGauges(this.registry, METRIC_PREFIX);
    }
  }

  /** The series of one route, looked up once per (re)load so the request path does no label work. */
  forRoute(routeId: string, store: string) {
    const outcome = {} as Record<Outcome, CounterSeries>;
    for (const o of [
      'forwarded',
      'limited',
      'bad_key',
      'key_unavailable',
      'no_route',
      'bad_request',
      'store_error_allowed',
      'store_error_denied',
      'overloaded',
      'key_in_flight',
      'upstream_error',
    ] as const) {
      outcome[o] = this.requests.labels(routeId, o);
    }
    return {
      outcome,
      /** The decision series of one rule of this route. */
      forRule: (rule: string, shadow: boolean) => {
        const s = shadow ? 'true' : 'false';
        return {
          allowed: this.decisions.labels(routeId, rule, 'allowed', s),
          limited: this.decisions.labels(routeId, rule, 'limited', s),
        };
      },
      storeError: this.storeErrors.labels(routeId, store),
      storeDuration: this.storeDuration.labels(store),
      proxyDuration: this.proxyDuration.labels(routeId),
      forwardDuration: this.forwardDuration.labels(routeId),
    };
  }
}

export type RouteMetrics = ReturnType<SidecarMetrics['forRoute']>;
export type RuleMetrics = ReturnType<RouteMetrics['forRule']>;

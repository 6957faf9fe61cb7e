// The chart's Grafana dashboard asks only for what the programs export: it parses, every panel
// has queries, and each query's metric names (and the labels it matches on) are in the sidecar's
// or the auth server's registry, read from the code rather than from a list kept by hand.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import type { Registry } from 'prom-client';
import { z } from 'zod';
import { AuthMetrics } from '../../services/auth-server/metrics.ts';
import { SidecarMetrics } from '../../sidecar/metrics.ts';

const dashboardFile = new URL(
  '../../charts/portcullis/dashboards/portcullis.json',
  import.meta.url,
);

const targetSchema = z.object({
  refId: z.string(),
  expr: z.string().min(1),
  legendFormat: z.string(),
});
const panelSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('row'), id: z.number(), title: z.string() }),
  z.object({
    type: z.literal('timeseries'),
    id: z.number(),
    title: z.string(),
    description: z.string().min(1),
    targets: z.array(targetSchema).min(1),
  }),
]);
const dashboardSchema = z.object({
  uid: z.string().min(1),
  title: z.string().min(1),
  panels: z.array(panelSchema).min(1),
  templating: z.object({
    list: z.array(z.object({ name: z.string(), query: z.unknown().optional() })),
  }),
});

/** Functions and aggregations the dashboard may call. */
const PROMQL_FUNCTIONS = new Set([
  'sum',
  'rate',
  'increase',
  'histogram_quantile',
  'max',
  'min',
  'avg',
  'label_values',
]);
/** Labels Prometheus adds to every scraped series (target labels), and the PodMonitor's relabelled one. */
const TARGET_LABELS = new Set([
  'namespace',
  'pod',
  'container',
  'job',
  'instance',
  'endpoint',
  'service',
  'portcullis_route',
]);

interface Exported {
  readonly labels: ReadonlySet<string>;
}

/** Every series name a registry exposes (histograms as _bucket, _sum and _count) with its label names. */
function exportedSeries(registry: Registry): Map<string, Exported> {
  const out = new Map<string, Exported>();
  for (const metric of registry.getMetricsAsArray()) {
    const labelNames =
      z.array(z.string()).optional().parse(Reflect.get(metric, 'labelNames')) ?? [];
    const labels = new Set([...labelNames, ...TARGET_LABELS]);
    // prom-client's typings declare a numeric enum; at run time `type` is the exposition's word.
    if (String(metric.type) === 'histogram') {
      out.set(`${metric.name}_bucket`, { labels: new Set([...labels, 'le']) });
      out.set(`${metric.name}_sum`, { labels });
      out.set(`${metric.name}_count`, { labels });
    } else {
      out.set(metric.name, { labels });
    }
  }
  return out;
}

interface Reference {
  readonly metric: string;
  readonly matchers: readonly string[];
}

/**
 * The metric names a PromQL expression reads, each with the label names its selector matches
 * on, and the functions it calls. Grouping clauses (by, without) name labels, not metrics.
 */
function parsePromql(expr: string): {
  references: Reference[];
  functions: string[];
  grouping: string[];
} {
  const references: Reference[] = [];
  const functions: string[] = [];
  const grouping: string[] = [];
  let rest = expr.replace(/\[[^\]]*\]/g, ' '); // range selectors such as [$__rate_interval]
  rest = rest.replace(/\b(by|without)\s*\(([^)]*)\)/g, (_, _kw: string, labels: string) => {
    grouping.push(
      ...labels
        .split(',')
        .map((l) => l.trim())
        .filter((l) => l !== ''),
    );
    return ' ';
  });
  const token = /([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\(|\{[^}]*\})?/g;
  for (const m of rest.matchAll(token)) {
    const [, name = '', after = ''] = m;
    if (after === '(') {
      functions.push(name);
      continue;
    }
    const matchers = after.startsWith('{')
      ? [...after.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"/g)].map(
          (x) => x[1] ?? '',
        )
      : [];
    references.push({ metric: name, matchers });
  }
  return { references, functions, grouping };
}

const sidecar = new SidecarMetrics();
const auth = new AuthMetrics();
afterAll(() => {
  sidecar.registry.clear();
  auth.registry.clear();
});

describe('the chart dashboard', () => {
  const dashboard = dashboardSchema.parse(JSON.parse(readFileSync(dashboardFile, 'utf8')));
  const exported = new Map([...exportedSeries(sidecar.registry), ...exportedSeries(auth.registry)]);
  const panels = dashboard.panels.flatMap((p) => (p.type === 'timeseries' ? [p] : []));

  it('parses, and has the panels platform teams asked for', () => {
    expect(panels.map((p) => p.title)).toEqual([
      'Requests by outcome',
      '429s (limited)',
      'Shadow mode: would-be refusals',
      'Limiter store errors',
      'Limiter store latency (p50, p99)',
      'Latency the gateway adds p99, and the whole exchange',
      'Requests by endpoint and status class',
      'Sign-ins by result',
      'Access tokens issued by grant type',
      'Client-authentication failures',
      'Store latency p99 and errors',
      'Sign-in and token endpoint latency p99',
    ]);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const added =
      panels.find((p) => p.title.startsWith('Latency the gateway adds'))?.targets[0]?.expr ?? '';
    expect(added).toContain('portcullis_sidecar_forward_duration_seconds_bucket{');
    const shadow = panels.find((p) => p.title.startsWith('Shadow'))?.targets[0]?.expr ?? '';
    expect(shadow).toContain('portcullis_sidecar_limiter_decisions_total{');
    expect(shadow).toMatch(/decision="limited"/);
    expect(shadow).toMatch(/shadow="true"/);
  });

  it.each(panels.flatMap((p) => p.targets.map((t) => [`${p.title} ${t.refId}`, t.expr] as const)))(
    '%s reads only exported metrics and labels',
    (_, expr) => {
      const { references, functions, grouping } = parsePromql(expr);
      expect(references.length).toBeGreaterThan(0);
      for (const f of functions) expect(PROMQL_FUNCTIONS, `function ${f}`).toContain(f);
      for (const { metric, matchers } of references) {
        const series = exported.get(metric);
        expect(series, `${metric} is not exported by the sidecar or the auth server`).toBeDefined();
        for (const label of [...matchers, ...grouping])
          expect(series?.labels, `${metric} has no label ${label}`).toContain(label);
      }
    },
  );

  it('its variables read exported metrics too', () => {
    const queries = dashboard.templating.list.flatMap((v) => {
      const q = z.object({ query: z.string() }).safeParse(v.query);
      return q.success ? [q.data.query] : [];
    });
    expect(queries.length).toBe(2);
    for (const q of queries) {
      const { references } = parsePromql(q.replace(/^label_values\((.*),\s*\w+\)$/, '$1'));
      for (const { metric } of references) expect(exported.has(metric), metric).toBe(true);
    }
  });

  it('the checker itself catches a metric no program exports and a label a metric lacks', () => {
    const { references } = parsePromql(
      'histogram_quantile(0.99, sum by (le) (rate(portcullis_sidecar_no_such_seconds_bucket{route=~"$route"}[5m])))',
    );
    expect(references.map((r) => r.metric)).toEqual(['portcullis_sidecar_no_such_seconds_bucket']);
    expect(exported.has('portcullis_sidecar_no_such_seconds_bucket')).toBe(false);
    expect(
      exported.get('portcullis_sidecar_store_duration_seconds_bucket')?.labels.has('route'),
    ).toBe(false);
    expect(
      exported.get('portcullis_sidecar_proxy_duration_seconds_bucket')?.labels.has('route'),
    ).toBe(true);
  });
});

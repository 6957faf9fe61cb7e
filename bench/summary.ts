// The summary of the latest results of every suite: bench/results/summary.md (the headline table
// with the goals, then each suite's own table) and bench/results/chart.svg (plain bars, written by
// hand: no chart library). Nothing outside the results folder is written.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { GatewayBenchResult } from './gateway.ts';
import { loadavg } from './lib/measure.ts';
import type { OperatorBenchResult } from './operator.ts';
import type { TokenBenchResult } from './token.ts';

/** The latest result of a suite, or undefined when absent or written by an older version of it (without the `lists`). */
function read<T>(dir: string, name: string, ...lists: string[]): T | undefined {
  const file = path.join(dir, `${name}.json`);
  if (!existsSync(file)) return undefined;
  const x = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  return lists.every((k) => Array.isArray(x[k])) ? (x as T) : undefined;
}

/** The headline rows: each performance goal (docs/reference/performance.md) with its measured figure, and the context rows that explain them. */
function headline(dir: string): string {
  const g = read<GatewayBenchResult>(dir, 'gateway', 'goals', 'scenarios');
  const t = read<TokenBenchResult>(dir, 'token', 'servers');
  const o = read<{ runs: OperatorBenchResult[] }>(dir, 'operator-scale', 'runs');
  const rows: string[] = [];
  if (g !== undefined) {
    const s = (n: string) => g.scenarios.find((x) => x.name === n);
    for (const goal of g.goals)
      rows.push(
        `| gateway: ${goal.name} | ${goal.goal} | ${goal.measured} | ${goal.met ? 'yes' : '**no**'} |`,
      );
    const direct = s('direct');
    const sr = s('sidecar-redis');
    if (direct !== undefined && sr !== undefined)
      rows.push(
        `| gateway: sidecar-redis CPU per request / direct's (context) | - | ${(sr.saturation.cpuUsPerRequest / Math.max(1, direct.saturation.cpuUsPerRequest)).toFixed(2)}x (${sr.saturation.cpuUsPerRequest} vs ${direct.saturation.cpuUsPerRequest} µs) | - |`,
      );
    const w = (x: typeof sr) =>
      x?.fixedRate.waitingForCpu === undefined
        ? '?'
        : `${Math.round(x.fixedRate.waitingForCpu * 100)} %`;
    if (sr?.fixedRate.waitingForCpu !== undefined)
      rows.push(
        `| gateway: share of the fixed-rate round the process waited for a CPU (context for p99), sidecar-redis / direct / nginx | - | ${w(sr)} / ${w(direct)} / ${w(s('nginx'))} | - |`,
      );
    const addedBy = ['nginx', 'bare-proxy', 'sidecar-memory', 'node-peer'].flatMap((n) => {
      const x = s(n)?.fixedRate.p99AddedMs;
      return x === undefined ? [] : [`${n} ${x} ms`];
    });
    if (addedBy.length > 0)
      rows.push(
        `| gateway: p99 added over direct by the other proxies in the same fixed-rate rounds (context for the p99 goal) | - | ${addedBy.join(', ')} | - |`,
      );
    const floor = s('bare-proxy');
    if (floor !== undefined) {
      // The goals that the same proxy with nothing in it misses belong to Node and this machine.
      const [vsPeer, added] = [
        g.ratios['throughput bare-proxy/node-peer'],
        floor.fixedRate.p99AddedMs,
      ];
      const parts = [
        vsPeer === undefined ? undefined : `throughput vs Node peer ${vsPeer}x`,
        added === undefined ? undefined : `p99 added over direct ${added} ms`,
        floor.peakRssMiB > 0 ? `peak RSS ${floor.peakRssMiB} MiB` : undefined,
      ].filter((x) => x !== undefined);
      rows.push(
        `| gateway: the floor of any Node proxy against the same goals: bare-proxy (node:http + undici, nothing else, bundled and capped like the sidecar), same rounds (context) | - | ${parts.join(', ')} | - |`,
      );
    }
    for (const [measure, ratio] of [
      ['CPU per request, Node peer / sidecar-redis', 'cpu-efficiency sidecar-redis/node-peer'],
      ['CPU per request, nginx / sidecar-redis', 'cpu-efficiency sidecar-redis/nginx'],
      ['CPU per request, jwt Node peer / jwt sidecar', 'cpu-efficiency sidecar-jwt/node-peer-jwt'],
      [
        'jwt key throughput / header key, same sidecar (context)',
        'throughput sidecar-jwt/sidecar-redis',
      ],
    ]) {
      const x = g.ratios[ratio as string];
      if (x !== undefined) rows.push(`| gateway: ${measure} | - | ${x}x | - |`);
    }
  }
  if (t !== undefined) {
    const [p, op] = ['portcullis', 'oidc-provider'].map((n) => t.servers.find((x) => x.name === n));
    rows.push(
      `| token endpoint: exchanges/s vs oidc-provider | > 1x | ${t.ratio}x (${p?.exchangesPerSecond ?? '?'} vs ${op?.exchangesPerSecond ?? '?'}/s) | ${t.goal.met ? 'yes' : '**no**'} |`,
    );
  }
  for (const r of o?.runs ?? [])
    rows.push(
      `| operator: ${r.routes} RateLimitRoutes converged | - | ${(r.convergenceMs / 1000).toFixed(1)} s, ${r.requests.perRoute} requests/route, no-op resync writes ${r.noopResync.writes}, peak RSS ${r.memoryMiB.peakRss} MiB | - |`,
    );
  const when = [g?.startedAt, t?.startedAt].filter(Boolean).join(', ');
  return [
    `Latest \`make bench\` (${when}; load average at the gateway run's start ${loadavg(g?.machine.loadavgAtStart)}, end ${loadavg(g?.machine.loadavgAtEnd)}; 2 shared cores, so ratios from the same interleaved run count, not absolute numbers):`,
    '',
    '| measure | goal | measured | met |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

type Bar = { label: string; value: number; highlight: boolean };

function bars(title: string, unit: string, items: Bar[], y: number, width: number) {
  const rowH = 22;
  const labelW = 150;
  const max = Math.max(1, ...items.map((i) => i.value));
  const scale = (width - labelW - 90) / max;
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [`<text x="10" y="${y + 16}" font-weight="bold">${esc(title)}</text>`];
  items.forEach((it, i) => {
    const top = y + 26 + i * rowH;
    const w = Math.max(1, Math.round(it.value * scale));
    parts.push(
      `<text x="${labelW - 6}" y="${top + 14}" text-anchor="end">${esc(it.label)}</text>`,
      `<rect x="${labelW}" y="${top + 2}" width="${w}" height="${rowH - 6}" fill="${it.highlight ? '#c0392b' : '#7f8c8d'}"/>`,
      `<text x="${labelW + w + 6}" y="${top + 14}">${esc(`${Math.round(it.value * 10) / 10} ${unit}`)}</text>`,
    );
  });
  return { svg: parts.join('\n'), height: 26 + items.length * rowH + 14 };
}

function chartSvg(dir: string): string {
  const g = read<GatewayBenchResult>(dir, 'gateway', 'goals', 'scenarios');
  const t = read<TokenBenchResult>(dir, 'token', 'servers');
  const width = 640;
  const svg: string[] = [];
  let y = 10;
  const panel = (title: string, unit: string, items: Bar[]) => {
    const p = bars(title, unit, items, y, width);
    svg.push(p.svg);
    y += p.height;
  };
  if (g !== undefined) {
    const items = (pick: (s: GatewayBenchResult['scenarios'][number]) => number) =>
      g.scenarios.map((s) => ({
        label: s.name,
        value: pick(s),
        highlight: s.name.startsWith('sidecar'),
      }));
    const offered = g.scenarios[0]?.fixedRate.offered ?? '';
    panel(
      'Gateway throughput at saturation (requests/s, median)',
      'req/s',
      items((s) => s.saturation.requestsPerSecond),
    );
    panel(
      'CPU per request of the front process (µs, lower is better)',
      'µs',
      items((s) => s.saturation.cpuUsPerRequest),
    );
    panel(
      `p99 at a fixed ${offered} req/s (ms, lower is better)`,
      'ms',
      items((s) => s.fixedRate.latencyMs.p99),
    );
  }
  if (t !== undefined) {
    const items = t.servers.map((s) => ({
      label: s.name,
      value: s.exchangesPerSecond,
      highlight: s.name === 'portcullis',
    }));
    panel('Token endpoint: code exchanges/s (median)', '/s', items);
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 10}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...svg,
    '</svg>',
  ].join('\n');
}

/** Writes summary.md and chart.svg into `dir` (bench/results/) and nothing else; returns what it wrote. */
export function writeSummary(dir: string): string[] {
  const head = headline(dir);
  const sections = ['gateway', 'decision', 'token', 'redis-cost', 'operator-scale']
    .filter((n) => existsSync(path.join(dir, `${n}.md`)))
    .map((n) => readFileSync(path.join(dir, `${n}.md`), 'utf8').trim());
  writeFileSync(
    path.join(dir, 'summary.md'),
    `${[head, '', '![benchmark chart](chart.svg)', '', ...sections.flatMap((s) => [s, ''])].join('\n')}`,
  );
  writeFileSync(path.join(dir, 'chart.svg'), `${chartSvg(dir)}\n`);
  return ['bench/results/summary.md', 'bench/results/chart.svg'];
}

if (import.meta.main)
  console.log(`written: ${writeSummary(path.join(import.meta.dirname, 'results')).join(', ')}`);

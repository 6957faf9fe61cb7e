// The summary of the latest results of every suite: bench/results/summary.md (the headline table
// with the goals, then each suite's own table) and bench/results/chart.svg (plain bars, written by
// hand: no chart library). Nothing outside the results folder is written.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { GatewayBenchResult } from './gateway-report.ts';
import type { OperatorBenchResult } from './operator-report.ts';
import type { TokenBenchResult } from './token-report.ts';

/** The latest result of a suite, or undefined when absent or written by an older version of the suite. */
function read<T>(
  dir: string,
  name: string,
  current: (x: Record<string, unknown>) => boolean,
): T | undefined {
  const file = path.join(dir, `${name}.json`);
  if (!existsSync(file)) return undefined;
  const x = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  return current(x) ? (x as T) : undefined;
}

const isGateway = (x: Record<string, unknown>) =>
  Array.isArray(x['goals']) && Array.isArray(x['scenarios']);
const isToken = (x: Record<string, unknown>) => Array.isArray(x['servers']);
const isOperatorScale = (x: Record<string, unknown>) => Array.isArray(x['runs']);

const loadavg = (xs: number[] | undefined) => (xs ?? []).map((x) => x.toFixed(1)).join(' ');

/** The headline rows: each performance goal (docs/reference/performance.md) with its measured figure, and the context rows that explain them. */
export function headline(dir: string): string {
  const g = read<GatewayBenchResult>(dir, 'gateway', isGateway);
  const t = read<TokenBenchResult>(dir, 'token', isToken);
  const o = read<{ runs: OperatorBenchResult[] }>(dir, 'operator-scale', isOperatorScale);
  const rows: string[] = [];
  if (g !== undefined) {
    const s = (n: string) => g.scenarios.find((x) => x.name === n);
    for (const goal of g.goals)
      rows.push(
        `| gateway: ${goal.name} | ${goal.goal} | ${goal.measured} | ${goal.met ? 'yes' : '**no**'} |`,
      );
    const direct = s('direct');
    const sr = s('sidecar-redis');
    if (direct !== undefined && sr !== undefined) {
      rows.push(
        `| gateway: sidecar-redis CPU per request / direct's (context) | - | ${(sr.saturation.cpuUsPerRequest / Math.max(1, direct.saturation.cpuUsPerRequest)).toFixed(2)}x (${sr.saturation.cpuUsPerRequest} vs ${direct.saturation.cpuUsPerRequest} µs) | - |`,
      );
    }
    const w = (x: typeof sr) =>
      x?.fixedRate.waitingForCpu === undefined
        ? '?'
        : `${Math.round(x.fixedRate.waitingForCpu * 100)} %`;
    if (sr?.fixedRate.waitingForCpu !== undefined) {
      rows.push(
        `| gateway: share of the fixed-rate round the process waited for a CPU (context for p99), sidecar-redis / direct / nginx | - | ${w(sr)} / ${w(direct)} / ${w(s('nginx'))} | - |`,
      );
    }
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
      const parts = [
        g.ratios['throughput bare-proxy/node-peer'] === undefined
          ? undefined
          : `throughput vs Node peer ${g.ratios['throughput bare-proxy/node-peer']}x`,
        floor.fixedRate.p99AddedMs === undefined
          ? undefined
          : `p99 added over direct ${floor.fixedRate.p99AddedMs} ms`,
        floor.peakRssMiB > 0 ? `peak RSS ${floor.peakRssMiB} MiB` : undefined,
      ].filter((x) => x !== undefined);
      rows.push(
        `| gateway: the floor of any Node proxy against the same goals: bare-proxy (node:http + undici, nothing else, bundled and capped like the sidecar), same rounds (context) | - | ${parts.join(', ')} | - |`,
      );
    }
    const c = g.ratios['cpu-efficiency sidecar-redis/node-peer'];
    if (c !== undefined)
      rows.push(`| gateway: CPU per request, Node peer / sidecar-redis | - | ${c}x | - |`);
    const cn = g.ratios['cpu-efficiency sidecar-redis/nginx'];
    if (cn !== undefined)
      rows.push(`| gateway: CPU per request, nginx / sidecar-redis | - | ${cn}x | - |`);
    const jc = g.ratios['cpu-efficiency sidecar-jwt/node-peer-jwt'];
    if (jc !== undefined)
      rows.push(`| gateway: CPU per request, jwt Node peer / jwt sidecar | - | ${jc}x | - |`);
    const jh = g.ratios['throughput sidecar-jwt/sidecar-redis'];
    if (jh !== undefined)
      rows.push(
        `| gateway: jwt key throughput / header key, same sidecar (context) | - | ${jh}x | - |`,
      );
  }
  if (t !== undefined) {
    const p = t.servers.find((x) => x.name === 'portcullis');
    const op = t.servers.find((x) => x.name === 'oidc-provider');
    rows.push(
      `| token endpoint: exchanges/s vs oidc-provider | > 1x | ${t.ratio}x (${p?.exchangesPerSecond ?? '?'} vs ${op?.exchangesPerSecond ?? '?'}/s) | ${t.goal.met ? 'yes' : '**no**'} |`,
    );
  }
  if (o !== undefined) {
    for (const r of o.runs) {
      rows.push(
        `| operator: ${r.routes} RateLimitRoutes converged | - | ${(r.convergenceMs / 1000).toFixed(1)} s, ${r.requests.perRoute} requests/route, no-op resync writes ${r.noopResync.writes}, peak RSS ${r.memoryMiB.peakRss} MiB | - |`,
      );
    }
  }
  const when = [g?.startedAt, t?.startedAt].filter(Boolean).join(', ');
  return [
    `Latest \`make bench\` (${when}; load average at the gateway run's start ${loadavg(g?.machine.loadavgAtStart)}, end ${loadavg(g?.machine.loadavgAtEnd)}; 2 shared cores, so ratios from the same interleaved run count, not absolute numbers):`,
    '',
    '| measure | goal | measured | met |',
    '|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function bars(
  title: string,
  unit: string,
  items: { label: string; value: number; highlight?: boolean }[],
  y: number,
  width: number,
): { svg: string; height: number } {
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
      `<rect x="${labelW}" y="${top + 2}" width="${w}" height="${rowH - 6}" fill="${it.highlight === true ? '#c0392b' : '#7f8c8d'}"/>`,
      `<text x="${labelW + w + 6}" y="${top + 14}">${esc(`${Math.round(it.value * 10) / 10} ${unit}`)}</text>`,
    );
  });
  return { svg: parts.join('\n'), height: 26 + items.length * rowH + 14 };
}

export function chartSvg(dir: string): string {
  const g = read<GatewayBenchResult>(dir, 'gateway', isGateway);
  const t = read<TokenBenchResult>(dir, 'token', isToken);
  const width = 640;
  const panels: string[] = [];
  let y = 10;
  const add = (p: { svg: string; height: number }) => {
    panels.push(p.svg);
    y += p.height;
  };
  if (g !== undefined) {
    const items = (pick: (s: GatewayBenchResult['scenarios'][number]) => number) =>
      g.scenarios.map((s) => ({
        label: s.name,
        value: pick(s),
        highlight: s.name.startsWith('sidecar'),
      }));
    add(
      bars(
        'Gateway throughput at saturation (requests/s, median)',
        'req/s',
        items((s) => s.saturation.requestsPerSecond),
        y,
        width,
      ),
    );
    add(
      bars(
        'CPU per request of the front process (µs, lower is better)',
        'µs',
        items((s) => s.saturation.cpuUsPerRequest),
        y,
        width,
      ),
    );
    add(
      bars(
        `p99 at a fixed ${g.scenarios[0]?.fixedRate.offered ?? ''} req/s (ms, lower is better)`,
        'ms',
        items((s) => s.fixedRate.latencyMs.p99),
        y,
        width,
      ),
    );
  }
  if (t !== undefined) {
    add(
      bars(
        'Token endpoint: code exchanges/s (median)',
        '/s',
        t.servers.map((s) => ({
          label: s.name,
          value: s.exchangesPerSecond,
          highlight: s.name === 'portcullis',
        })),
        y,
        width,
      ),
    );
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 10}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...panels,
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

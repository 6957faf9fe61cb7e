// The gateway suite's result and its reading: the per-round ratios between the fronts, the goals
// judged from them (docs/reference/performance.md#goals), and the Markdown table of bench/results/gateway.md.
import { median, r2 } from './lib/measure.ts';

export interface Latency {
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
}

export interface GatewayScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly saturation: {
    /** Median over the rounds. */
    readonly requestsPerSecond: number;
    /** Latency of the median round, ms (closed model). */
    readonly latencyMs: Latency;
    /** CPU time of the front process per request (µs; user+system), median round. */
    readonly cpuUsPerRequest: number;
    readonly errors: number;
  };
  readonly fixedRate: {
    readonly offered: number;
    /** Median over the rounds. */
    readonly achieved: number;
    /** Latency of the median-p99 round, ms, from the intended send time. */
    readonly latencyMs: Latency;
    readonly cpuUsPerRequest: number;
    /** Share of the round the front process spent runnable but waiting for a CPU (median round). */
    readonly waitingForCpu: number;
    /** p99 minus direct's p99 in the same round, median over the rounds, ms (absent for direct). */
    readonly p99AddedMs?: number;
    readonly errors: number;
  };
  /** Peak resident memory (VmHWM) of the front process(es) over the whole run, MiB. */
  readonly peakRssMiB: number;
  /**
   * The largest sampled resident set (every 250 ms over the whole run) split in two: private
   * anonymous memory (heap, stacks, buffers: what each more replica costs) and file pages (the
   * executable and its libraries, shared by every process that maps them), MiB.
   */
  readonly sampledPeak: { rssMiB: number; anonMiB: number; fileMiB: number };
  readonly rounds: {
    saturation: {
      requestsPerSecond: number;
      p50Ms: number;
      p99Ms: number;
      p999Ms: number;
      cpuUsPerRequest: number;
    }[];
    fixedRate: {
      achieved: number;
      p50Ms: number;
      p99Ms: number;
      p999Ms: number;
      cpuUsPerRequest: number;
      waitingForCpu: number;
    }[];
  };
}

export interface GatewayBenchResult {
  readonly suite: 'gateway';
  readonly startedAt: string;
  readonly machine: {
    cpus: number;
    model: string;
    node: string;
    loadavgAtStart: number[];
    loadavgAtEnd: number[];
  };
  readonly load: {
    saturation: string;
    fixedRate: string;
    users: number;
    connections: number;
    durationS: number;
    warmupS: number;
    rounds: number;
  };
  /** GET /jwks.json answered over the whole run (each jwt gateway should fetch once, then cache). */
  readonly jwksFetches: number;
  readonly scenarios: GatewayScenarioResult[];
  /** Median over rounds of the per-round ratios (same round, same conditions). */
  readonly ratios: Record<string, number>;
  /** The lowest and highest per-round value of each ratio: how far one round alone could mislead. */
  readonly ratioRanges?: Record<string, [number, number]>;
  readonly goals: { name: string; goal: string; measured: string; met: boolean }[];
}

const load = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');

/**
 * The per-round ratios between the fronts (median, and the lowest and highest round) and the goals
 * judged from them, for the scenarios of one run of `rounds` rounds at a fixed rate of `offered`.
 */
export function gatewayGoals(
  scenarios: readonly GatewayScenarioResult[],
  rounds: number,
  offered: number,
): Pick<GatewayBenchResult, 'ratios' | 'goals'> & {
  ratioRanges: Record<string, [number, number]>;
} {
  // Per-round ratios, then their median.
  const byName = new Map(scenarios.map((s) => [s.name, s]));
  const ratioRanges: Record<string, [number, number]> = {};
  const ratio = (
    a: string,
    b: string,
    pick: (s: GatewayScenarioResult, i: number) => number | undefined,
    name: string,
  ): number | undefined => {
    const sa = byName.get(a);
    const sb = byName.get(b);
    if (sa === undefined || sb === undefined) return undefined;
    const xs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const x = pick(sa, i);
      const y = pick(sb, i);
      if (x !== undefined && y !== undefined && y !== 0) xs.push(x / y);
    }
    if (xs.length === 0) return undefined;
    ratioRanges[name] = [r2(Math.min(...xs)), r2(Math.max(...xs))];
    return r2(median(xs));
  };
  const rps = (s: GatewayScenarioResult, i: number) => s.rounds.saturation[i]?.requestsPerSecond;
  const cpuPer = (s: GatewayScenarioResult, i: number) => s.rounds.saturation[i]?.cpuUsPerRequest;
  const ratios: Record<string, number> = {};
  for (const [a, b] of [
    ['sidecar-redis', 'node-peer'],
    ['sidecar-redis', 'nginx'],
    ['sidecar-redis', 'direct'],
    ['sidecar-memory', 'direct'],
    ['nginx', 'direct'],
    ['node-peer', 'direct'],
    ['bare-proxy', 'direct'],
    ['bare-proxy', 'node-peer'],
    ['sidecar-redis', 'bare-proxy'],
    ['sidecar-jwt', 'node-peer-jwt'],
    ['sidecar-jwt', 'sidecar-redis'],
    ['node-peer-jwt', 'node-peer'],
  ] as const) {
    const x = ratio(a, b, rps, `throughput ${a}/${b}`);
    if (x !== undefined) ratios[`throughput ${a}/${b}`] = x;
    // Against the bare proxy, CPU per request is one of the goal rows below (sidecar over floor).
    if (b === 'direct' || b === 'bare-proxy') continue;
    const c = ratio(b, a, cpuPer, `cpu-efficiency ${a}/${b}`); // higher is better for a: b's CPU per request over a's
    if (c !== undefined) ratios[`cpu-efficiency ${a}/${b}`] = c;
  }
  const tj = ratios['throughput sidecar-jwt/node-peer-jwt'];
  const addedP99 = byName.get('sidecar-redis')?.fixedRate.p99AddedMs;
  const goals: GatewayBenchResult['goals'] = [];
  const spread = (name: string) => {
    const r = ratioRanges[name];
    return r === undefined ? '' : ` (rounds ${r[0]}-${r[1]})`;
  };
  const tp = ratios['throughput sidecar-redis/node-peer'];
  if (tp !== undefined)
    goals.push({
      name: 'throughput vs Node peer',
      goal: '>= 1.5x',
      measured: `${tp}x${spread('throughput sidecar-redis/node-peer')}`,
      met: tp >= 1.5,
    });
  const tn = ratios['throughput sidecar-redis/nginx'];
  if (tn !== undefined)
    goals.push({
      name: 'throughput vs nginx',
      goal: '>= 0.5x',
      measured: `${tn}x${spread('throughput sidecar-redis/nginx')}`,
      met: tn >= 0.5,
    });
  if (tj !== undefined)
    goals.push({
      name: 'jwt key: throughput vs the Node peer verifying the same tokens',
      goal: '>= 1.5x',
      measured: `${tj}x${spread('throughput sidecar-jwt/node-peer-jwt')}`,
      met: tj >= 1.5,
    });
  if (addedP99 !== undefined)
    goals.push({
      name: `p99 added over direct at ${offered} req/s (half saturation)`,
      goal: '< 2 ms',
      measured: `${addedP99} ms`,
      met: addedP99 < 2,
    });
  // The sidecar against the floor of any Node proxy, as deployed (Redis store): CPU per request at
  // saturation and at the fixed rate, and the p99 each adds over direct in the same rounds.
  const cpuFixed = (s: GatewayScenarioResult, i: number) => s.rounds.fixedRate[i]?.cpuUsPerRequest;
  const directRounds = byName.get('direct')?.rounds.fixedRate ?? [];
  const p99Added = (s: GatewayScenarioResult, i: number) => {
    const r = s.rounds.fixedRate[i];
    const d = directRounds[i];
    // A round where the front added nothing measurable gives no ratio.
    return r === undefined || d === undefined || r.p99Ms <= d.p99Ms ? undefined : r.p99Ms - d.p99Ms;
  };
  for (const [label, pick] of [
    ['CPU per request at saturation', cpuPer],
    [`CPU per request at ${offered} req/s`, cpuFixed],
    [`p99 added over direct at ${offered} req/s`, p99Added],
  ] as const) {
    const name = `sidecar-redis/bare-proxy ${label}`;
    const x = ratio('sidecar-redis', 'bare-proxy', pick, name);
    if (x === undefined) continue;
    ratios[name] = x;
    const mem = ratio('sidecar-memory', 'bare-proxy', pick, `sidecar-memory/bare-proxy ${label}`);
    if (mem !== undefined) ratios[`sidecar-memory/bare-proxy ${label}`] = mem;
    goals.push({
      name: `sidecar ${label}, over the bare Node proxy's`,
      goal: '<= 1.15x',
      measured: `${x}x${spread(name)}${mem === undefined ? '' : `; memory store ${mem}x${spread(`sidecar-memory/bare-proxy ${label}`)}`}`,
      met: x <= 1.15,
    });
  }
  const heavier = [byName.get('sidecar-redis'), byName.get('sidecar-memory')].reduce((a, b) =>
    (b?.peakRssMiB ?? 0) > (a?.peakRssMiB ?? 0) ? b : a,
  );
  const rss = heavier?.peakRssMiB ?? 0;
  if (rss > 0) {
    const split = heavier?.sampledPeak;
    const parts =
      split === undefined || split.rssMiB === 0
        ? ''
        : ` (largest sample ${split.rssMiB}: private ${split.anonMiB} + executable and libraries ${split.fileMiB})`;
    goals.push({
      name: 'sidecar peak RSS under load (as deployed)',
      goal: '< 100 MB',
      measured: `${rss} MiB${parts}`,
      met: rss * 1.048576 < 100,
    });
  }

  return { ratios, ratioRanges, goals };
}

export function gatewayMarkdown(result: GatewayBenchResult): string {
  const lat = (l: Latency) => `${l.p50} / ${l.p99} / ${l.p999}`;
  const rows = result.scenarios.map(
    (s) =>
      `| ${s.name} | ${s.description} | ${s.saturation.requestsPerSecond} | ${lat(s.saturation.latencyMs)} | ${s.saturation.cpuUsPerRequest} | ` +
      `${s.fixedRate.achieved} | ${lat(s.fixedRate.latencyMs)} | ${s.fixedRate.cpuUsPerRequest} | ${s.fixedRate.p99AddedMs ?? '-'} | ${Math.round((s.fixedRate.waitingForCpu ?? 0) * 100)} % | ` +
      `${s.peakRssMiB} | ${s.sampledPeak === undefined ? '?' : `${s.sampledPeak.anonMiB} + ${s.sampledPeak.fileMiB}`} | ${s.saturation.errors + s.fixedRate.errors} |`,
  );
  return [
    `Gateway, ${result.startedAt}: ${result.machine.cpus} CPUs (${result.machine.model}), Node ${result.machine.node}; ` +
      `median of ${result.load.rounds} interleaved rounds of ${result.load.durationS} s per load (order rotated each round); saturation: ${result.load.saturation}; ` +
      `fixed rate: ${result.load.fixedRate}; JWKS fetched ${result.jwksFetches} times; load average ${load(result.machine.loadavgAtStart)} at start, ${load(result.machine.loadavgAtEnd)} at end.`,
    '',
    '| target | what | saturation req/s | p50 / p99 / p99.9 ms | CPU µs/req | fixed-rate req/s | p50 / p99 / p99.9 ms | CPU µs/req | p99 added over direct, ms | waiting for a CPU (fixed rate) | peak RSS MiB | largest sample: private + file MiB | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Ratios (median of per-round ratios, lowest-highest round in brackets): ${Object.entries(
      result.ratios,
    )
      .map(([k, v]) => {
        const r = result.ratioRanges?.[k];
        return `${k} = ${v}${r === undefined ? '' : ` [${r[0]}-${r[1]}]`}`;
      })
      .join('; ')}.`,
    '',
    '| goal | target | measured | met |',
    '|---|---|---|---|',
    ...result.goals.map(
      (g) => `| ${g.name} | ${g.goal} | ${g.measured} | ${g.met ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}

// The gateway suite's reading of its rounds: each front's result (the median round of each load,
// the p99 it adds over the user service alone in the same round, errors, memory), the per-round
// ratios between the fronts, the goals judged from them (docs/reference/performance.md#goals),
// and bench/results/gateway.md.
import type { GatewayBenchResult } from './gateway.ts';
import { type LoadgenResult, lgFailures, wrkErrors, wrkRps, type WrkResult } from './lib/load.ts';
import { loadavg, median, medianRound, mib, ms, r2, spread } from './lib/measure.ts';
import { perRound } from './lib/suite.ts';

/** One round of a front at saturation (wrk). */
export type SaturationRound = { wrk: WrkResult; cpuUsPerRequest: number };
/** One round at the fixed rate; waitingForCpu: the share of it the front was runnable but not running. */
export type FixedRateRound = { lg: LoadgenResult; cpuUsPerRequest: number; waitingForCpu: number };

type LatencyUs = WrkResult['latencyUs'];
const NONE: LatencyUs = { p50: 0, p99: 0, p999: 0, max: 0 };
/** A round's latency in ms (zeros without a round). */
const toMs = (l = NONE) => ({ p50: ms(l.p50), p99: ms(l.p99), p999: ms(l.p999), max: ms(l.max) });
/** A round's p50, p99 and p99.9 in ms, as the per-round records give them. */
const roundMs = (l: LatencyUs) => ({ p50Ms: ms(l.p50), p99Ms: ms(l.p99), p999Ms: ms(l.p999) });

export type Latency = ReturnType<typeof toMs>;

/**
 * `rounds.direct`: the user service's own fixed-rate rounds, the baseline of the added p99;
 * `sampled`: the highest RSS sampled during the run, KiB, split into anonymous and file pages.
 */
export function scenarioResult(
  t: { readonly name: string; readonly description: string },
  rounds: {
    readonly saturation: readonly SaturationRound[];
    readonly fixedRate: readonly FixedRateRound[];
    readonly direct: readonly FixedRateRound[];
  },
  offered: number,
  peakRssMiB: number,
  sampled = { rss: 0, anon: 0, file: 0 },
) {
  const s = rounds.saturation;
  const f = rounds.fixedRate;
  const added =
    t.name === 'direct'
      ? []
      : perRound(f, rounds.direct, (r, d) => (r.lg.latencyUs.p99 - d.lg.latencyUs.p99) / 1000);
  return {
    name: t.name,
    description: t.description,
    saturation: {
      requestsPerSecond: median(s.map((r) => wrkRps(r.wrk))),
      latencyMs: toMs(medianRound(s, (r) => wrkRps(r.wrk))?.wrk.latencyUs),
      cpuUsPerRequest: median(s.map((r) => r.cpuUsPerRequest)),
      errors: s.reduce((n, r) => n + wrkErrors(r.wrk), 0),
    },
    fixedRate: {
      offered,
      achieved: Math.round(median(f.map((r) => r.lg.achievedRate))),
      latencyMs: toMs(medianRound(f, (r) => r.lg.latencyUs.p99)?.lg.latencyUs),
      cpuUsPerRequest: median(f.map((r) => r.cpuUsPerRequest)),
      waitingForCpu: median(f.map((r) => r.waitingForCpu)),
      /** p99 minus direct's p99 in the same round, median over the rounds, ms (absent for direct). */
      ...(added.length > 0 ? { p99AddedMs: r2(median(added)) } : {}),
      errors: f.reduce((n, r) => n + lgFailures(r.lg), 0),
    },
    peakRssMiB,
    /** The largest resident set sampled every 250 ms: private (what each more replica costs) and file pages (shared). */
    sampledPeak: {
      rssMiB: mib(sampled.rss * 1024),
      anonMiB: mib(sampled.anon * 1024),
      fileMiB: mib(sampled.file * 1024),
    },
    rounds: {
      saturation: s.map(({ wrk, cpuUsPerRequest }) => ({
        requestsPerSecond: wrkRps(wrk),
        ...roundMs(wrk.latencyUs),
        cpuUsPerRequest,
      })),
      fixedRate: f.map(({ lg, cpuUsPerRequest, waitingForCpu }) => ({
        achieved: Math.round(lg.achievedRate),
        ...roundMs(lg.latencyUs),
        cpuUsPerRequest,
        waitingForCpu,
      })),
    },
  };
}

type GatewayScenarioResult = ReturnType<typeof scenarioResult>;

type Pick = (s: GatewayScenarioResult, round: number) => number | undefined;

/** The pairs whose throughput (and, against another gateway, CPU per request) is compared. */
const PAIRS = [
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
] as const;

/** The throughput goals: the ratio each is judged by, and the least it may be. */
const THROUGHPUT_GOALS = [
  ['throughput vs Node peer', 'sidecar-redis/node-peer', 1.5],
  ['throughput vs nginx', 'sidecar-redis/nginx', 0.5],
  [
    'jwt key: throughput vs the Node peer verifying the same tokens',
    'sidecar-jwt/node-peer-jwt',
    1.5,
  ],
] as const;

/**
 * The per-round ratios between the fronts (median, and the lowest and highest round: how far one
 * round alone could mislead) and the goals judged from them, for the scenarios of one run of
 * `rounds` rounds at a fixed rate of `offered`.
 */
export function gatewayGoals(scenarios: GatewayScenarioResult[], rounds: number, offered: number) {
  const byName = new Map(scenarios.map((s) => [s.name, s]));
  const ratios: Record<string, number> = {};
  const ratioRanges: Record<string, [number, number]> = {};
  /** The median over the rounds of pick(a) / pick(b), recorded as `name`. */
  const ratio = (name: string, a: string, b: string, pick: Pick) => {
    const [sa, sb] = [byName.get(a), byName.get(b)];
    if (sa === undefined || sb === undefined) return undefined;
    const xs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const [x, y] = [pick(sa, i), pick(sb, i)];
      if (x !== undefined && y !== undefined && y !== 0) xs.push(x / y);
    }
    if (xs.length === 0) return undefined;
    const { median, low, high } = spread(xs);
    ratioRanges[name] = [low, high];
    return (ratios[name] = median);
  };
  const measured = (name: string) => {
    const r = ratioRanges[name];
    return `${ratios[name]}x${r === undefined ? '' : ` (rounds ${r[0]}-${r[1]})`}`;
  };
  const rps: Pick = (s, i) => s.rounds.saturation[i]?.requestsPerSecond;
  const cpuPer: Pick = (s, i) => s.rounds.saturation[i]?.cpuUsPerRequest;
  for (const [a, b] of PAIRS) {
    ratio(`throughput ${a}/${b}`, a, b, rps);
    // Against the bare proxy, CPU per request is one of the goal rows below (sidecar over floor).
    // Higher is better for a: b's CPU per request over a's.
    if (b !== 'direct' && b !== 'bare-proxy') ratio(`cpu-efficiency ${a}/${b}`, b, a, cpuPer);
  }
  const goals: { name: string; goal: string; measured: string; met: boolean }[] = [];
  for (const [name, pair, least] of THROUGHPUT_GOALS) {
    const x = ratios[`throughput ${pair}`];
    if (x !== undefined)
      goals.push({
        name,
        goal: `>= ${least}x`,
        measured: measured(`throughput ${pair}`),
        met: x >= least,
      });
  }
  const addedP99 = byName.get('sidecar-redis')?.fixedRate.p99AddedMs;
  if (addedP99 !== undefined)
    goals.push({
      name: `p99 added over direct at ${offered} req/s (half saturation)`,
      goal: '< 2 ms',
      measured: `${addedP99} ms`,
      met: addedP99 < 2,
    });
  // The sidecar against the floor of any Node proxy, as deployed (Redis store): CPU per request at
  // saturation and at the fixed rate, and the p99 each adds over direct in the same rounds.
  const cpuFixed: Pick = (s, i) => s.rounds.fixedRate[i]?.cpuUsPerRequest;
  const directRounds = byName.get('direct')?.rounds.fixedRate ?? [];
  const p99Added: Pick = (s, i) => {
    const [r, d] = [s.rounds.fixedRate[i], directRounds[i]];
    // A round where the front added nothing measurable gives no ratio.
    return r === undefined || d === undefined || r.p99Ms <= d.p99Ms ? undefined : r.p99Ms - d.p99Ms;
  };
  for (const [label, pick] of [
    ['CPU per request at saturation', cpuPer],
    [`CPU per request at ${offered} req/s`, cpuFixed],
    [`p99 added over direct at ${offered} req/s`, p99Added],
  ] as const) {
    const name = `sidecar-redis/bare-proxy ${label}`;
    const x = ratio(name, 'sidecar-redis', 'bare-proxy', pick);
    if (x === undefined) continue;
    const memName = `sidecar-memory/bare-proxy ${label}`;
    const mem = ratio(memName, 'sidecar-memory', 'bare-proxy', pick);
    goals.push({
      name: `sidecar ${label}, over the bare Node proxy's`,
      goal: '<= 1.15x',
      measured: `${measured(name)}${mem === undefined ? '' : `; memory store ${measured(memName)}`}`,
      met: x <= 1.15,
    });
  }
  const heavier = [byName.get('sidecar-redis'), byName.get('sidecar-memory')].reduce((a, b) =>
    (b?.peakRssMiB ?? 0) > (a?.peakRssMiB ?? 0) ? b : a,
  );
  const rss = heavier?.peakRssMiB ?? 0;
  if (heavier !== undefined && rss > 0) {
    const { rssMiB, anonMiB, fileMiB } = heavier.sampledPeak;
    const parts =
      rssMiB === 0
        ? ''
        : ` (largest sample ${rssMiB}: private ${anonMiB} + executable and libraries ${fileMiB})`;
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
  const { machine: m, load } = result;
  const rows = result.scenarios.map(
    (s) =>
      `| ${s.name} | ${s.description} | ${s.saturation.requestsPerSecond} | ${lat(s.saturation.latencyMs)} | ${s.saturation.cpuUsPerRequest} | ` +
      `${s.fixedRate.achieved} | ${lat(s.fixedRate.latencyMs)} | ${s.fixedRate.cpuUsPerRequest} | ${s.fixedRate.p99AddedMs ?? '-'} | ${Math.round((s.fixedRate.waitingForCpu ?? 0) * 100)} % | ` +
      `${s.peakRssMiB} | ${s.sampledPeak === undefined ? '?' : `${s.sampledPeak.anonMiB} + ${s.sampledPeak.fileMiB}`} | ${s.saturation.errors + s.fixedRate.errors} |`,
  );
  const ratios = Object.entries(result.ratios).map(([k, v]) => {
    const r = result.ratioRanges?.[k];
    return `${k} = ${v}${r === undefined ? '' : ` [${r[0]}-${r[1]}]`}`;
  });
  return [
    `Gateway, ${result.startedAt}: ${m.cpus} CPUs (${m.model}), Node ${m.node}; ` +
      `median of ${load.rounds} interleaved rounds of ${load.durationS} s per load (order rotated each round); saturation: ${load.saturation}; ` +
      `fixed rate: ${load.fixedRate}; JWKS fetched ${result.jwksFetches} times; load average ${loadavg(m.loadavgAtStart)} at start, ${loadavg(m.loadavgAtEnd)} at end.`,
    '',
    '| target | what | saturation req/s | p50 / p99 / p99.9 ms | CPU µs/req | fixed-rate req/s | p50 / p99 / p99.9 ms | CPU µs/req | p99 added over direct, ms | waiting for a CPU (fixed rate) | peak RSS MiB | largest sample: private + file MiB | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Ratios (median of per-round ratios, lowest-highest round in brackets): ${ratios.join('; ')}.`,
    '',
    '| goal | target | measured | met |',
    '|---|---|---|---|',
    ...result.goals.map(
      (g) => `| ${g.name} | ${g.goal} | ${g.measured} | ${g.met ? 'yes' : 'no'} |`,
    ),
  ].join('\n');
}

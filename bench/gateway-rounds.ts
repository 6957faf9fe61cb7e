// From the gateway suite's rounds to one front's result: the median round of each load (by
// requests per second at saturation, by p99 at the fixed rate), the p99 it adds over the user
// service alone in the same round, its errors and its memory peaks.
import type { GatewayScenarioResult } from './gateway-report.ts';
import type { LoadgenResult } from './lib/loadgen.ts';
import { median, r2 } from './lib/measure.ts';
import { wrkErrors, type WrkResult } from './lib/wrk.ts';

export const ms = (us: number) => Math.round(us) / 1000;
export const wrkRps = (w: WrkResult) => Math.round(w.requests / (w.durationUs / 1e6));

/** One round of a front at saturation (wrk). */
export interface SaturationRound {
  readonly wrk: WrkResult;
  readonly cpuUsPerRequest: number;
}

/** One round of a front at the fixed rate (bench/loadgen). */
export interface FixedRateRound {
  readonly lg: LoadgenResult;
  readonly cpuUsPerRequest: number;
  readonly waitingForCpu: number;
}

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
  sampled: { rss: number; anon: number; file: number } | undefined,
): GatewayScenarioResult {
  const s = rounds.saturation;
  const f = rounds.fixedRate;
  const midS = [...s].sort((a, b) => wrkRps(a.wrk) - wrkRps(b.wrk))[Math.floor(s.length / 2)];
  const midF = [...f].sort((a, b) => a.lg.latencyUs.p99 - b.lg.latencyUs.p99)[
    Math.floor(f.length / 2)
  ];
  const direct = rounds.direct;
  const added =
    t.name === 'direct'
      ? []
      : f.flatMap((r, i) => {
          const d = direct[i];
          return d === undefined ? [] : [(r.lg.latencyUs.p99 - d.lg.latencyUs.p99) / 1000];
        });
  const peak = sampled ?? { rss: 0, anon: 0, file: 0 };
  const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
  const lgErr = (l: LoadgenResult) =>
    l.errors +
    l.dropped +
    Object.entries(l.statuses).reduce((n, [code, c]) => n + (code === '200' ? 0 : c), 0);
  return {
    name: t.name,
    description: t.description,
    saturation: {
      requestsPerSecond: median(s.map((r) => wrkRps(r.wrk))),
      latencyMs:
        midS === undefined
          ? { p50: 0, p99: 0, p999: 0, max: 0 }
          : {
              p50: ms(midS.wrk.latencyUs.p50),
              p99: ms(midS.wrk.latencyUs.p99),
              p999: ms(midS.wrk.latencyUs.p999),
              max: ms(midS.wrk.latencyUs.max),
            },
      cpuUsPerRequest: median(s.map((r) => r.cpuUsPerRequest)),
      errors: s.reduce((n, r) => n + wrkErrors(r.wrk), 0),
    },
    fixedRate: {
      offered,
      achieved: Math.round(median(f.map((r) => r.lg.achievedRate))),
      latencyMs:
        midF === undefined
          ? { p50: 0, p99: 0, p999: 0, max: 0 }
          : {
              p50: ms(midF.lg.latencyUs.p50),
              p99: ms(midF.lg.latencyUs.p99),
              p999: ms(midF.lg.latencyUs.p999),
              max: ms(midF.lg.latencyUs.max),
            },
      cpuUsPerRequest: median(f.map((r) => r.cpuUsPerRequest)),
      waitingForCpu: median(f.map((r) => r.waitingForCpu)),
      ...(added.length > 0 ? { p99AddedMs: r2(median(added)) } : {}),
      errors: f.reduce((n, r) => n + lgErr(r.lg), 0),
    },
    peakRssMiB,
    sampledPeak: { rssMiB: mib(peak.rss), anonMiB: mib(peak.anon), fileMiB: mib(peak.file) },
    rounds: {
      saturation: s.map((r) => ({
        requestsPerSecond: wrkRps(r.wrk),
        p50Ms: ms(r.wrk.latencyUs.p50),
        p99Ms: ms(r.wrk.latencyUs.p99),
        p999Ms: ms(r.wrk.latencyUs.p999),
        cpuUsPerRequest: r.cpuUsPerRequest,
      })),
      fixedRate: f.map((r) => ({
        achieved: Math.round(r.lg.achievedRate),
        p50Ms: ms(r.lg.latencyUs.p50),
        p99Ms: ms(r.lg.latencyUs.p99),
        p999Ms: ms(r.lg.latencyUs.p999),
        cpuUsPerRequest: r.cpuUsPerRequest,
        waitingForCpu: r.waitingForCpu,
      })),
    },
  };
}

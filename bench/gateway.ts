// Gateway benchmark (bench/README.md says what it runs): the sidecar beside its anchors
// (bench/gateway-fronts.ts) behind one user service, BENCH_USERS users in turn (USER-ID, or a
// bearer token that the jwt fronts verify from their caches after the warm-up). Two loads, each in
// interleaved rounds: saturation (wrk, closed model) and a fixed rate of half sidecar-redis'
// saturation (bench/loadgen, open model). CPU per request of the front's processes varies far less
// than requests/s on a shared machine; ratios are taken within a round.
// Bounded: BENCH_ROUNDS (7) rounds x 8 fronts x 2 loads x BENCH_DURATION_S (4 s) + warm-ups.
import os from 'node:os';
import { startGatewayFronts, type Target } from './gateway-fronts.ts';
import type { FixedRateRound, SaturationRound } from './gateway-report.ts';
import { gatewayGoals, scenarioResult } from './gateway-report.ts';
import { ensureLoadgen, runRate, runWrk, wrkRps } from './lib/load.ts';
import {
  cpuUs,
  machine,
  median,
  ms,
  peakRssMiB,
  r1,
  r2,
  rssSplitKiB,
  runDelayMs,
} from './lib/measure.ts';
import { ensureSystemDeps, interleave } from './lib/suite.ts';

export async function runGatewayBench(log: (line: string) => void = console.log) {
  ensureSystemDeps('wrk:wrk', 'nginx:nginx');
  ensureLoadgen();
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 4);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 7);
  const warmupS = Number(process.env['BENCH_WARMUP_S'] ?? 5); // JIT and heap settle: round 1 was ~20 % slower after 2 s
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);
  const userCount = Number(process.env['BENCH_USERS'] ?? 1000);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();

  const users = Array.from({ length: userCount }, (_, i) => `user-${i + 1}`);
  const fronts = await startGatewayFronts(users);
  const only = (process.env['BENCH_TARGETS'] ?? '').split(',').filter(Boolean);
  const chosen = fronts.targets.filter((t) => only.length === 0 || only.includes(t.name));
  /** A load on a target: its users in turn for `seconds`. */
  const on = (t: Target, seconds: number) => ({
    url: `${t.base}/healthcheck/ready`,
    connections,
    durationS: seconds,
    rotateHeaderFile: t.headerFile,
  });
  let saturation: SaturationRound[][] = [];
  let fixedRate: FixedRateRound[][] = [];
  let offered = 0;
  const peakRss: number[] = [];
  /** The largest resident set sampled per target, KiB, split into anonymous and file pages. */
  const sampled = new Map<string, { rss: number; anon: number; file: number }>();
  const sampler = setInterval(() => {
    for (const t of chosen) {
      const now = rssSplitKiB(...t.rssPids());
      if (now.rss > (sampled.get(t.name)?.rss ?? 0)) sampled.set(t.name, now);
    }
  }, 250);
  try {
    if (warmupS > 0) for (const t of chosen) await runWrk(on(t, warmupS)); // 0: none
    log(
      `saturation: wrk, ${connections} connections, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`,
    );
    saturation = await interleave(chosen, rounds, async (t, round) => {
      const before = cpuUs(...t.cpuPids());
      const wrk = await runWrk(on(t, durationS));
      const cpuUsPerRequest = r1((cpuUs(...t.cpuPids()) - before) / Math.max(1, wrk.requests));
      log(
        `  round ${round} ${t.name}: ${wrkRps(wrk)} req/s, p50 ${ms(wrk.latencyUs.p50)} ms, p99 ${ms(wrk.latencyUs.p99)} ms, ${cpuUsPerRequest} µs CPU/request, load ${os.loadavg()[0]?.toFixed(1)}`,
      );
      return { wrk, cpuUsPerRequest };
    });
    const reference =
      saturation[chosen.findIndex((t) => t.name === 'sidecar-redis')] ?? saturation[0] ?? [];
    offered = Math.max(100, Math.round(median(reference.map((r) => wrkRps(r.wrk))) / 2 / 50) * 50);
    log(
      `fixed rate: ${offered} req/s offered (half of sidecar-redis' saturation), open model, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`,
    );
    fixedRate = await interleave(chosen, rounds, async (t, round) => {
      const [cpuBefore, waitedBefore] = [cpuUs(...t.cpuPids()), runDelayMs(...t.cpuPids())];
      const lg = await runRate({ ...on(t, durationS), rate: offered });
      const cpuUsPerRequest = r1((cpuUs(...t.cpuPids()) - cpuBefore) / Math.max(1, lg.completed));
      const waited = runDelayMs(...t.cpuPids()) - waitedBefore;
      const waitingForCpu = r2(waited / Math.max(1, lg.elapsedUs / 1000));
      log(
        `  round ${round} ${t.name}: ${Math.round(lg.achievedRate)} req/s, p50 ${ms(lg.latencyUs.p50)} ms, p99 ${ms(lg.latencyUs.p99)} ms, p99.9 ${ms(lg.latencyUs.p999)} ms, ` +
          `${cpuUsPerRequest} µs CPU/request, waited for a CPU ${Math.round(waitingForCpu * 100)} % of the time`,
      );
      return { lg, cpuUsPerRequest, waitingForCpu };
    });
    for (const t of chosen) peakRss.push(peakRssMiB(...t.rssPids()));
  } finally {
    clearInterval(sampler);
    await fronts.stop();
  }

  const direct = fixedRate[chosen.findIndex((t) => t.name === 'direct')] ?? [];
  const scenarios = chosen.map((t, i) =>
    scenarioResult(
      t,
      { saturation: saturation[i] ?? [], fixedRate: fixedRate[i] ?? [], direct },
      offered,
      peakRss[i] ?? 0,
      sampled.get(t.name),
    ),
  );
  return {
    suite: 'gateway' as const,
    startedAt,
    machine: machine(loadavgAtStart),
    load: {
      saturation: `wrk (Debian), ${connections} connections, 1 thread, ${userCount} users in turn`,
      fixedRate: `bench/loadgen (Go, open model), ${offered} req/s, ${connections} connections, ${userCount} users in turn`,
      users: userCount,
      connections,
      durationS,
      warmupS,
      rounds,
    },
    /** GET /jwks.json answered over the whole run (each jwt gateway should fetch once, then cache). */
    jwksFetches: fronts.issuer.jwksFetches(),
    scenarios,
    ...gatewayGoals(scenarios, rounds, offered),
  };
}

export type GatewayBenchResult = Awaited<ReturnType<typeof runGatewayBench>>;

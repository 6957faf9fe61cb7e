// Token endpoint benchmark (bench/README.md): authorization-code exchanges per second, Portcullis'
// auth server as deployed (BENCH_AUTH_NODE_OPTIONS replaces its V8 caps) against oidc-provider set
// up the same way (bench/peers/oidc-provider-peer.ts). Each round mints BENCH_CODES (1000) codes per
// server through its flow (bench/token-servers.ts: the sign-in's scrypt stays out of the figure),
// then bench/loadgen sends every exchange once over 16 connections; rounds interleave the servers.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { browser } from '../test/harness/auth-flow.ts';
import { ensureLoadgen, lgFailures, runList, type LoadgenResult } from './lib/load.ts';
import {
  cpuUs,
  loadavg,
  machine,
  median,
  medianRound,
  ms,
  peakRssMiB,
  r1,
  r2,
} from './lib/measure.ts';
import { interleave, perRound } from './lib/suite.ts';
import { exchangeFile, inspectToken, mintCodes, startTokenServers } from './token-servers.ts';

/** Only successful exchanges count: a failed one (e.g. an evicted code) is cheaper than a real one. */
const okRate = (l: LoadgenResult) => ((l.statuses['200'] ?? 0) * 1e6) / Math.max(1, l.elapsedUs);

export async function runTokenBench(log: (line: string) => void = console.log) {
  ensureLoadgen();
  const codesPerRound = Number(process.env['BENCH_CODES'] ?? 1000);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const connections = 16;
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-token-bench-'));

  const { servers, stop } = await startTokenServers(dir);
  /** What one issued access token of each server looked like (checked, not assumed). */
  const inspected: Awaited<ReturnType<typeof inspectToken>>[] = [];
  let measured: { lg: LoadgenResult; cpuUsPerExchange: number }[][] = [];
  const rss: number[] = [];
  try {
    for (const s of servers) {
      const b = browser();
      await s.mint(b); // consent given once
      inspected.push(await inspectToken(s.issuer, await s.mint(b)));
      // Warm-up: 100 exchanges.
      const warm = await mintCodes(s, 100, b);
      const file = exchangeFile(dir, `${s.name}-warm`, warm);
      await runList({ baseUrl: s.issuer, file, connections });
    }
    measured = await interleave(servers, rounds, async (s, round) => {
      const b = browser();
      await s.mint(b);
      const t0 = performance.now();
      const codes = await mintCodes(s, codesPerRound, b);
      const file = exchangeFile(dir, `${s.name}-${round}`, codes);
      const before = cpuUs(s.pid);
      const lg = await runList({ baseUrl: s.issuer, file, connections });
      const cpuUsPerExchange = r1((cpuUs(s.pid) - before) / Math.max(1, lg.completed));
      log(
        `  round ${round} ${s.name}: minted ${codesPerRound} codes in ${Math.round(performance.now() - t0)} ms; ` +
          `${Math.round(okRate(lg))} exchanges/s, p50 ${lg.latencyUs.p50 / 1000} ms, p99 ${lg.latencyUs.p99 / 1000} ms, ${cpuUsPerExchange} µs CPU/exchange, ${lgFailures(lg)} failed` +
          (lgFailures(lg) > 0 ? ` (${lg.firstError ?? lg.sampleNon2xxBody ?? ''})` : ''),
      );
      return { lg, cpuUsPerExchange };
    });
  } finally {
    rss.push(...servers.map((s) => peakRssMiB(s.pid)));
    await stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const out = servers.map((s, i) => {
    const rs = measured[i] ?? [];
    const mid = medianRound(rs, (r) => okRate(r.lg))?.lg.latencyUs;
    return {
      name: s.name,
      description: s.description,
      /** Median over rounds. */
      exchangesPerSecond: Math.round(median(rs.map((r) => okRate(r.lg)))),
      latencyMs: { p50: ms(mid?.p50 ?? 0), p99: ms(mid?.p99 ?? 0), p999: ms(mid?.p999 ?? 0) },
      cpuUsPerExchange: median(rs.map((r) => r.cpuUsPerExchange)),
      failures: rs.reduce((n, r) => n + lgFailures(r.lg), 0),
      peakRssMiB: rss[i] ?? 0,
      accessToken: inspected[i] as (typeof inspected)[number],
      rounds: rs.map((r) => ({
        exchangesPerSecond: Math.round(okRate(r.lg)),
        p50Ms: ms(r.lg.latencyUs.p50),
        p99Ms: ms(r.lg.latencyUs.p99),
        cpuUsPerExchange: r.cpuUsPerExchange,
        failures: lgFailures(r.lg),
      })),
    };
  });
  /** Median of per-round ratios. */
  const ratio = r2(
    median(
      perRound(out[0]?.rounds ?? [], out[1]?.rounds ?? [], (a, b) =>
        b.exchangesPerSecond > 0 ? a.exchangesPerSecond / b.exchangesPerSecond : NaN,
      ).filter(Number.isFinite),
    ),
  );
  return {
    suite: 'token' as const,
    startedAt,
    machine: machine(loadavgAtStart),
    load: {
      codesPerRound,
      connections,
      rounds,
      generator: 'bench/loadgen list mode (Go), every exchange sent once',
    },
    servers: out,
    ratio,
    goal: {
      goal: 'Portcullis ahead of oidc-provider (> 1x)',
      measured: `${ratio}x`,
      met: ratio > 1,
    },
  };
}

export type TokenBenchResult = Awaited<ReturnType<typeof runTokenBench>>;

export function tokenMarkdown(r: TokenBenchResult): string {
  return [
    `Token endpoint, ${r.startedAt}: ${r.machine.cpus} CPUs, Node ${r.machine.node}; ${r.load.codesPerRound} codes per round minted through each server's flow, ` +
      `then exchanged by ${r.load.generator} over ${r.load.connections} connections; median of ${r.load.rounds} interleaved rounds; ` +
      `load average ${loadavg(r.machine.loadavgAtStart)} at start, ${loadavg(r.machine.loadavgAtEnd)} at end.`,
    '',
    '| server | exchanges/s | p50 / p99 / p99.9 ms | CPU µs/exchange | access token | id_token | refresh token | failures | peak RSS MiB |',
    '|---|---:|---:|---:|---|---|---|---:|---:|',
    ...r.servers.map(
      (s) =>
        `| ${s.description} | ${s.exchangesPerSecond} | ${s.latencyMs.p50} / ${s.latencyMs.p99} / ${s.latencyMs.p999} | ${s.cpuUsPerExchange} | ` +
        `JWT ${s.accessToken.alg}, typ ${s.accessToken.typ} | ${s.accessToken.hasIdToken ? 'yes' : 'no'} | ${s.accessToken.hasRefreshToken ? 'yes' : 'no'} | ${s.failures} | ${s.peakRssMiB} |`,
    ),
    '',
    `Portcullis / oidc-provider exchanges per second (median of per-round ratios): ${r.ratio}x; goal ${r.goal.goal}: ${r.goal.met ? 'met' : 'not met'}.`,
  ].join('\n');
}

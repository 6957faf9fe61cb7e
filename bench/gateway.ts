// Gateway benchmark: the sidecar side by side with its anchors, in one run.
//   direct          the user service itself (the ceiling: no gateway)
//   nginx           Debian's nginx, proxy_pass + limit_req (per instance), 1 worker
//   sidecar-redis   Portcullis sidecar, Redis token bucket, run as the operator deploys it: the
//                   bundle (dist/sidecar/main.mjs) with the container's environment (SIDECAR_ENV)
//   node-peer       fastify + @fastify/http-proxy + @fastify/rate-limit with its Redis store
//   bare-proxy      node:http + undici Pool and nothing else (the floor of any Node gateway),
//                   bundled and run with the sidecar's environment like the sidecar
//   sidecar-memory  the sidecar with the in-memory token bucket
//   node-peer-jwt   the Node peer verifying access tokens with @fastify/jwt + get-jwks (ES256, iss,
//                   aud, typ; fast-jwt's cache of 10,000), keyed by the verified sub
//   sidecar-jwt     the Redis sidecar with limiter.key jwt (ES256 against the issuer's JWKS; iss,
//                   aud, typ at+jwt; verified tokens remembered until exp), keyed by sub
// Same upstream (one user-service process), same request (GET /healthcheck/ready), a limit nobody
// reaches (every request does the full limiter work), BENCH_USERS (1,000) users in turn: USER-ID:
// user-i, or for the jwt targets Authorization: Bearer <user-i's token> (minted at start by
// bench/lib/jwt-issuer.ts, so after the warm-up both jwt gateways verify from their caches).
// Two loads, rounds interleaved across the targets so a busy neighbour hurts all of them alike.
// The rounds are many and short, and each starts one target later than the last (the cyclic
// order stays, so neighbours stay neighbours): this machine's host drifts by a third within a
// minute, so the two targets of a compared pair should be measured seconds apart.
//   saturation  Debian's wrk, 50 connections, closed model: the most each target serves;
//   fixed rate  bench/loadgen (Go, open model like wrk2): half of sidecar-redis' saturation
//               throughput offered to every target, latency from the intended send time.
// Reported per target: median requests/s, p50/p99/p99.9, CPU µs per request of the front process
// (load-insensitive: on a shared 2-core machine it varies far less than requests/s), peak RSS.
// Ratios are taken within each round and the median ratio is reported.
// Bounded: BENCH_ROUNDS (7) rounds x 8 targets x 2 loads x BENCH_DURATION_S (4 s) + warm-ups.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AUDIENCE, checkJwtGateway, startGatewayFronts, type Target } from './gateway-fronts.ts';
import { gatewayGoals, type GatewayBenchResult } from './gateway-report.ts';
import {
  ms,
  scenarioResult,
  wrkRps,
  type FixedRateRound,
  type SaturationRound,
} from './gateway-rounds.ts';
import { startJwtIssuer } from './lib/jwt-issuer.ts';
import { ensureLoadgen, runRate } from './lib/loadgen.ts';
import { cpuUs, median, peakRssMiB, rotated, rssSplitKiB, runDelayMs } from './lib/measure.ts';
import { ensureWrk, runWrk } from './lib/wrk.ts';
import { ensureNginx } from './peers/nginx.ts';

export async function runGatewayBench(
  log: (line: string) => void = console.log,
): Promise<GatewayBenchResult> {
  ensureWrk();
  ensureNginx();
  ensureLoadgen();
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 4);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 7);
  const warmupS = Number(process.env['BENCH_WARMUP_S'] ?? 5); // JIT and heap settle: round 1 was ~20 % slower after 2 s
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);
  const userCount = Number(process.env['BENCH_USERS'] ?? 1000);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();

  const users = Array.from({ length: userCount }, (_, i) => `user-${i + 1}`);
  const issuer = await startJwtIssuer(users, AUDIENCE, Date.now());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-gateway-'));
  const userIdFile = path.join(dir, 'user-id.txt');
  const bearerFile = path.join(dir, 'bearer.txt');
  writeFileSync(userIdFile, `${users.map((u) => `USER-ID: ${u}`).join('\n')}\n`);
  writeFileSync(
    bearerFile,
    `${issuer.tokens.map((t) => `Authorization: Bearer ${t}`).join('\n')}\n`,
  );

  const fronts = await startGatewayFronts(issuer, userIdFile, bearerFile);
  const targets = fronts.targets;
  const only = (process.env['BENCH_TARGETS'] ?? '').split(',').filter(Boolean);
  const chosen = only.length > 0 ? targets.filter((t) => only.includes(t.name)) : targets;
  const cpu = (t: Target) => t.cpuPids().reduce((s: number, p) => s + cpuUs(p), 0);
  const sat = new Map<string, SaturationRound[]>(chosen.map((t) => [t.name, []]));
  const fixed = new Map<string, FixedRateRound[]>(chosen.map((t) => [t.name, []]));
  const waiting = (t: Target) => t.cpuPids().reduce((s: number, p) => s + runDelayMs(p), 0);
  let offered = 0;
  const peakRss = new Map<string, number>();
  const sampled = new Map<string, { rss: number; anon: number; file: number }>();
  const sampler = setInterval(() => {
    for (const t of chosen) {
      const now = t.rssPids().reduce(
        (acc, p) => {
          const x = rssSplitKiB(p);
          return { rss: acc.rss + x.rss, anon: acc.anon + x.anon, file: acc.file + x.file };
        },
        { rss: 0, anon: 0, file: 0 },
      );
      if (now.rss > (sampled.get(t.name)?.rss ?? 0)) sampled.set(t.name, now);
    }
  }, 250);
  try {
    for (const t of chosen.filter((x) => x.headerFile === bearerFile))
      await checkJwtGateway(t.name, t.base, issuer.tokens[0] ?? '');
    for (const t of chosen)
      await runWrk({
        url: `${t.base}/healthcheck/ready`,
        connections,
        threads: 1,
        durationS: warmupS,
        rotateHeaderFile: t.headerFile,
      });
    log(
      `saturation: wrk, ${connections} connections, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`,
    );
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(chosen, round - 1)) {
        const before = cpu(t);
        const wrk = await runWrk({
          url: `${t.base}/healthcheck/ready`,
          connections,
          threads: 1,
          durationS,
          rotateHeaderFile: t.headerFile,
        });
        const cpuUsPerRequest =
          Math.round(((cpu(t) - before) / Math.max(1, wrk.requests)) * 10) / 10;
        sat.get(t.name)?.push({ wrk, cpuUsPerRequest });
        log(
          `  round ${round} ${t.name}: ${wrkRps(wrk)} req/s, p50 ${ms(wrk.latencyUs.p50)} ms, p99 ${ms(wrk.latencyUs.p99)} ms, ${cpuUsPerRequest} µs CPU/request, load ${os.loadavg()[0]?.toFixed(1)}`,
        );
      }
    }
    const reference = sat.get('sidecar-redis') ?? sat.get(chosen[0]?.name ?? '') ?? [];
    offered = Math.max(100, Math.round(median(reference.map((r) => wrkRps(r.wrk))) / 2 / 50) * 50);
    log(
      `fixed rate: ${offered} req/s offered (half of sidecar-redis' saturation), open model, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`,
    );
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(chosen, round - 1)) {
        const before = cpu(t);
        const waitedBefore = waiting(t);
        const lg = await runRate({
          url: `${t.base}/healthcheck/ready`,
          rate: offered,
          durationS,
          connections,
          rotateHeaderFile: t.headerFile,
        });
        const cpuUsPerRequest =
          Math.round(((cpu(t) - before) / Math.max(1, lg.completed)) * 10) / 10;
        const waitingForCpu =
          Math.round(((waiting(t) - waitedBefore) / Math.max(1, lg.elapsedUs / 1000)) * 100) / 100;
        fixed.get(t.name)?.push({ lg, cpuUsPerRequest, waitingForCpu });
        log(
          `  round ${round} ${t.name}: ${Math.round(lg.achievedRate)} req/s, p50 ${ms(lg.latencyUs.p50)} ms, p99 ${ms(lg.latencyUs.p99)} ms, p99.9 ${ms(lg.latencyUs.p999)} ms, ` +
            `${cpuUsPerRequest} µs CPU/request, waited for a CPU ${Math.round(waitingForCpu * 100)} % of the time`,
        );
      }
    }
    for (const t of chosen)
      peakRss.set(
        t.name,
        Math.round(t.rssPids().reduce((s: number, p) => s + peakRssMiB(p), 0) * 10) / 10,
      );
  } finally {
    clearInterval(sampler);
    await fronts.stop();
    await issuer.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const scenarios = chosen.map((t) =>
    scenarioResult(
      t,
      {
        saturation: sat.get(t.name) ?? [],
        fixedRate: fixed.get(t.name) ?? [],
        direct: fixed.get('direct') ?? [],
      },
      offered,
      peakRss.get(t.name) ?? 0,
      sampled.get(t.name),
    ),
  );

  const { ratios, ratioRanges, goals } = gatewayGoals(scenarios, rounds, offered);

  return {
    suite: 'gateway',
    startedAt,
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model ?? 'unknown',
      node: process.version,
      loadavgAtStart,
      loadavgAtEnd: os.loadavg(),
    },
    load: {
      saturation: `wrk (Debian), ${connections} connections, 1 thread, ${userCount} users in turn`,
      fixedRate: `bench/loadgen (Go, open model), ${offered} req/s, ${connections} connections, ${userCount} users in turn`,
      users: userCount,
      connections,
      durationS,
      warmupS,
      rounds,
    },
    jwksFetches: issuer.jwksFetches(),
    scenarios,
    ratios,
    ratioRanges,
    goals,
  };
}

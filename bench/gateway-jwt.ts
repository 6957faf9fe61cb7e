// Gateway benchmark, jwt key source: the sidecar that keys its buckets on the sub of a verified
// access token, side by side with a Node peer doing the same job, in one run.
//   sidecar-header    Portcullis sidecar, Redis token bucket keyed by the USER-ID header (as deployed)
//   sidecar-jwt       the same sidecar with limiter.key jwt: verifies Authorization: Bearer (ES256
//                     against the issuer's JWKS; iss, aud, typ at+jwt), remembers verified tokens
//                     until exp, keys the bucket on sub and forwards it as USER-ID
//   node-peer-header  bench/peers/node-peer.ts keyed by the USER-ID header (as in the gateway suite)
//   node-peer-jwt     the same peer verifying the same tokens with @fastify/jwt + get-jwks (the way
//                     @fastify/jwt documents a JWKS), fast-jwt's verified-token cache of the same
//                     size, rate limit keyed by the verified sub, USER-ID set upstream from it; the
//                     key's PEM made once (the anchor of the goal)
//   node-peer-jwt-documented  the same with the documentation's recipe as written: get-jwks'
//                     getPublicKey on every request, which converts the cached JWK to PEM with
//                     jwk-to-pem each time (milliseconds of CPU); saturation only, as it carries a
//                     few hundred requests/s and would set the fixed rate of the others
// Every target uses the same Redis, the same upstream (one user-service process) and a limit nobody
// reaches. The load sends GET /healthcheck/ready for BENCH_JWT_USERS (1,000) users in turn: the
// header targets get USER-ID: user-i, the jwt targets Authorization: Bearer <user-i's token>. The
// tokens are minted at start (bench/jwt-issuer.ts), so after the warm-up both jwt gateways verify
// from their caches; the first request of each user paid for the signature check.
// Rounds interleaved and rotated as in bench/gateway.ts (the host drifts within a minute; compared
// pairs are measured seconds apart): saturation with wrk (50 connections, closed model), then a
// fixed rate (bench/loadgen, open model) of half the slowest target's saturation, a load every
// target carries, so that p99 compares the gateways' own latency rather than their queues.
// Bounded: BENCH_ROUNDS (7) rounds x (5 targets at saturation + 4 at the fixed rate) x BENCH_DURATION_S (4 s) + warm-ups.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { cpuUs, median, peakRssMiB, rotated, startBenchSidecar, unreachable, type Latency } from './gateway.ts';
import { ensureWrk, runWrk, wrkErrors, type WrkResult } from './gateway-wrk.ts';
import { startJwtIssuer } from './jwt-issuer.ts';
import { ensureLoadgen, runRate, type LoadgenResult } from './loadgen.ts';

export interface GatewayJwtScenarioResult {
  readonly name: string;
  readonly description: string;
  readonly saturation: {
    /** Median over the rounds. */
    readonly requestsPerSecond: number;
    /** Latency of the median round, ms (closed model). */
    readonly latencyMs: Latency;
    /** CPU time of the gateway process per request (µs; user+system), median over the rounds. */
    readonly cpuUsPerRequest: number;
    readonly errors: number;
  };
  /** Absent for a target measured at saturation only. */
  readonly fixedRate?: {
    readonly offered: number;
    readonly achieved: number;
    /** Latency of the median-p99 round, ms, from the intended send time. */
    readonly latencyMs: Latency;
    readonly errors: number;
  };
  /** Peak resident memory (VmHWM) of the gateway process over the run, MiB. */
  readonly peakRssMiB: number;
  readonly rounds: {
    saturation: { requestsPerSecond: number; p50Ms: number; p99Ms: number; cpuUsPerRequest: number }[];
    fixedRate: { achieved: number; p50Ms: number; p99Ms: number; p999Ms: number }[];
  };
}

export interface GatewayJwtBenchResult {
  readonly suite: 'gateway-jwt';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly load: { saturation: string; fixedRate: string; users: number; connections: number; durationS: number; warmupS: number; rounds: number };
  /** GET /jwks.json answered over the whole run (each jwt gateway should fetch once, then cache). */
  readonly jwksFetches: number;
  readonly scenarios: GatewayJwtScenarioResult[];
  /** Median over rounds of the per-round ratios (same round, same conditions). */
  readonly ratios: Record<string, number>;
  /** The lowest and highest per-round value of each ratio. */
  readonly ratioRanges: Record<string, [number, number]>;
  readonly goals: { name: string; goal: string; measured: string; met: boolean }[];
}

interface Target {
  readonly name: string;
  readonly description: string;
  readonly base: string;
  /** The per-user header lines the load generators send in turn. */
  readonly headerFile: string;
  readonly pid: () => number | undefined;
  /** Measured at saturation only (too slow to carry the others' fixed rate). */
  readonly saturationOnly?: boolean;
}

const AUDIENCE = 'bench-service';
const r2 = (x: number) => Math.round(x * 100) / 100;
const ms = (us: number) => Math.round(us) / 1000;
const wrkRps = (w: WrkResult) => Math.round(w.requests / (w.durationUs / 1e6));
const noLatency: Latency = { p50: 0, p99: 0, p999: 0, max: 0 };
const loadgenErrors = (l: LoadgenResult) => l.errors + l.dropped + Object.entries(l.statuses).reduce((n, [code, c]) => n + (code === '200' ? 0 : c), 0);

/** Refuses to measure a gateway that does not do the job: 401 without or with a forged token, 200 with a real one. */
async function checkJwtGateway(name: string, base: string, token: string): Promise<void> {
  const [head, payload, signature = ''] = token.split('.');
  const forged = `${head}.${payload}.${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
  const status = async (headers: Record<string, string>) => (await fetch(`${base}/healthcheck/ready`, { headers })).status;
  const seen = [await status({}), await status({ authorization: `Bearer ${forged}` }), await status({ authorization: `Bearer ${token}` })];
  if (seen.join() !== '401,401,200') throw new Error(`${name}: no token, a forged token and a valid token answered ${seen.join(', ')}, not 401, 401, 200`);
}

export async function runGatewayJwtBench(log: (line: string) => void = console.log): Promise<GatewayJwtBenchResult> {
  ensureWrk();
  ensureLoadgen();
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 4);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 7);
  const warmupS = Number(process.env['BENCH_WARMUP_S'] ?? 5);
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 50);
  const userCount = Number(process.env['BENCH_JWT_USERS'] ?? 1000);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();

  const users = Array.from({ length: userCount }, (_, i) => `user-${i + 1}`);
  const issuer = await startJwtIssuer(users, AUDIENCE, Date.now());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-jwt-'));
  const userIdFile = path.join(dir, 'user-id.txt');
  const bearerFile = path.join(dir, 'bearer.txt');
  writeFileSync(userIdFile, `${users.map((u) => `USER-ID: ${u}`).join('\n')}\n`);
  writeFileSync(bearerFile, `${issuer.tokens.map((t) => `Authorization: Bearer ${t}`).join('\n')}\n`);

  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({ entry: 'services/user-service/main.ts', env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }, waitPort: userPort, name: 'bench-user-service' });
  const userUrl = `http://127.0.0.1:${userPort}`;
  const jwt = { issuer: issuer.issuer, audience: AUDIENCE, jwksUrl: issuer.jwksUrl, claim: 'sub', algorithms: ['ES256' as const], cacheSize: 10_000 };
  const sidecarHeader = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-header');
  const sidecarJwt = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-jwt', 'deployed', { limiter: { ...unreachable, key: 'jwt', keyHeader: 'USER-ID', jwt } });
  const peerEnv = { UPSTREAM_URL: userUrl, REDIS_URL: redis.url, MAX: String(unreachable.burstCapacity), WINDOW_MS: '1000' };
  const peerHeaderPort = await freePort();
  const peerHeader = await startProgram({ entry: 'bench/peers/node-peer.ts', env: { ...peerEnv, PORT: String(peerHeaderPort) }, waitPort: peerHeaderPort, name: 'bench-node-peer-header' });
  const peerJwtPort = await freePort();
  const peerJwt = await startProgram({
    entry: 'bench/peers/node-peer.ts',
    env: { ...peerEnv, PORT: String(peerJwtPort), JWT_JWKS_URL: issuer.jwksUrl, JWT_ISSUER: issuer.issuer, JWT_AUDIENCE: AUDIENCE },
    waitPort: peerJwtPort,
    name: 'bench-node-peer-jwt',
  });
  const peerDocumentedPort = await freePort();
  const peerDocumented = await startProgram({
    entry: 'bench/peers/node-peer.ts',
    env: { ...peerEnv, PORT: String(peerDocumentedPort), JWT_JWKS_URL: issuer.jwksUrl, JWT_ISSUER: issuer.issuer, JWT_AUDIENCE: AUDIENCE, JWT_PEM: 'per-request' },
    waitPort: peerDocumentedPort,
    name: 'bench-node-peer-jwt-documented',
  });

  // The jwt sidecar sits between its two anchors, so both of its ratios compare neighbours.
  const targets: Target[] = [
    { name: 'node-peer-header', description: 'fastify + @fastify/http-proxy + @fastify/rate-limit (Redis store), key USER-ID header', base: `http://127.0.0.1:${peerHeaderPort}`, headerFile: userIdFile, pid: () => peerHeader.child.pid },
    { name: 'node-peer-jwt', description: 'the same + @fastify/jwt with get-jwks (ES256, iss, aud, typ), fast-jwt cache 10,000, key sub', base: `http://127.0.0.1:${peerJwtPort}`, headerFile: bearerFile, pid: () => peerJwt.child.pid },
    { name: 'sidecar-jwt', description: 'Portcullis sidecar, Redis token bucket, key jwt (ES256, iss, aud, typ), cache 10,000, key sub', base: sidecarJwt.url, headerFile: bearerFile, pid: () => sidecarJwt.program.child.pid },
    { name: 'sidecar-header', description: 'Portcullis sidecar, Redis token bucket, key USER-ID header', base: sidecarHeader.url, headerFile: userIdFile, pid: () => sidecarHeader.program.child.pid },
    {
      name: 'node-peer-jwt-documented',
      description: 'node-peer-jwt with @fastify/jwt\'s JWKS recipe as written: get-jwks getPublicKey (jwk-to-pem) on every request',
      base: `http://127.0.0.1:${peerDocumentedPort}`,
      headerFile: bearerFile,
      pid: () => peerDocumented.child.pid,
      saturationOnly: true,
    },
  ];
  const url = (t: Target) => `${t.base}/healthcheck/ready`;
  const sat = new Map<string, { wrk: WrkResult; cpuUsPerRequest: number }[]>(targets.map((t) => [t.name, []]));
  const fixed = new Map<string, LoadgenResult[]>(targets.map((t) => [t.name, []]));
  const peakRss = new Map<string, number>();
  let offered = 0;
  try {
    const firstToken = issuer.tokens[0] ?? '';
    for (const t of targets.filter((x) => x.headerFile === bearerFile)) await checkJwtGateway(t.name, t.base, firstToken);
    for (const t of targets) await runWrk({ url: url(t), connections, threads: 1, durationS: warmupS, rotateHeaderFile: t.headerFile });
    log(`saturation: wrk, ${connections} connections, ${userCount} users in turn, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`);
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(targets, round - 1)) {
        const before = cpuUs(t.pid());
        const wrk = await runWrk({ url: url(t), connections, threads: 1, durationS, rotateHeaderFile: t.headerFile });
        const cpuUsPerRequest = Math.round(((cpuUs(t.pid()) - before) / Math.max(1, wrk.requests)) * 10) / 10;
        sat.get(t.name)?.push({ wrk, cpuUsPerRequest });
        log(`  round ${round} ${t.name}: ${wrkRps(wrk)} req/s, p50 ${ms(wrk.latencyUs.p50)} ms, p99 ${ms(wrk.latencyUs.p99)} ms, ${cpuUsPerRequest} µs CPU/request, ${wrkErrors(wrk)} errors, load ${os.loadavg()[0]?.toFixed(1)}`);
      }
    }
    const steady = targets.filter((t) => t.saturationOnly !== true);
    const slowest = Math.min(...steady.map((t) => median((sat.get(t.name) ?? []).map((r) => wrkRps(r.wrk)))));
    offered = Math.max(100, Math.round(slowest / 2 / 50) * 50);
    log(`fixed rate: ${offered} req/s offered (half the slowest of ${steady.map((t) => t.name).join(', ')} at saturation), open model, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`);
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(steady, round - 1)) {
        const lg = await runRate({ url: url(t), rate: offered, durationS, connections, rotateHeaderFile: t.headerFile });
        fixed.get(t.name)?.push(lg);
        log(`  round ${round} ${t.name}: ${Math.round(lg.achievedRate)} req/s, p50 ${ms(lg.latencyUs.p50)} ms, p99 ${ms(lg.latencyUs.p99)} ms, p99.9 ${ms(lg.latencyUs.p999)} ms, ${loadgenErrors(lg)} errors`);
      }
    }
    for (const t of targets) peakRss.set(t.name, peakRssMiB(t.pid()));
  } finally {
    await Promise.allSettled([sidecarHeader.program.stop(), sidecarJwt.program.stop(), peerHeader.stop(), peerJwt.stop(), peerDocumented.stop()]);
    await user.stop();
    await redis.stop();
    await issuer.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const scenarios: GatewayJwtScenarioResult[] = targets.map((t) => {
    const s = sat.get(t.name) ?? [];
    const f = fixed.get(t.name) ?? [];
    const midS = [...s].sort((a, b) => wrkRps(a.wrk) - wrkRps(b.wrk))[Math.floor(s.length / 2)];
    const midF = [...f].sort((a, b) => a.latencyUs.p99 - b.latencyUs.p99)[Math.floor(f.length / 2)];
    return {
      name: t.name,
      description: t.description,
      saturation: {
        requestsPerSecond: Math.round(median(s.map((r) => wrkRps(r.wrk)))),
        latencyMs: midS === undefined ? noLatency : { p50: ms(midS.wrk.latencyUs.p50), p99: ms(midS.wrk.latencyUs.p99), p999: ms(midS.wrk.latencyUs.p999), max: ms(midS.wrk.latencyUs.max) },
        cpuUsPerRequest: Math.round(median(s.map((r) => r.cpuUsPerRequest)) * 10) / 10,
        errors: s.reduce((n, r) => n + wrkErrors(r.wrk), 0),
      },
      ...(t.saturationOnly === true
        ? {}
        : {
            fixedRate: {
              offered,
              achieved: Math.round(median(f.map((r) => r.achievedRate))),
              latencyMs: midF === undefined ? noLatency : { p50: ms(midF.latencyUs.p50), p99: ms(midF.latencyUs.p99), p999: ms(midF.latencyUs.p999), max: ms(midF.latencyUs.max) },
              errors: f.reduce((n, r) => n + loadgenErrors(r), 0),
            },
          }),
      peakRssMiB: peakRss.get(t.name) ?? 0,
      rounds: {
        saturation: s.map((r) => ({ requestsPerSecond: wrkRps(r.wrk), p50Ms: ms(r.wrk.latencyUs.p50), p99Ms: ms(r.wrk.latencyUs.p99), cpuUsPerRequest: r.cpuUsPerRequest })),
        fixedRate: f.map((r) => ({ achieved: Math.round(r.achievedRate), p50Ms: ms(r.latencyUs.p50), p99Ms: ms(r.latencyUs.p99), p999Ms: ms(r.latencyUs.p999) })),
      },
    };
  });

  // Per-round ratios (the two targets of a pair measured seconds apart), then their median.
  const byName = new Map(scenarios.map((s) => [s.name, s]));
  const ratios: Record<string, number> = {};
  const ratioRanges: Record<string, [number, number]> = {};
  const addRatio = (name: string, a: string, b: string, pick: (s: GatewayJwtScenarioResult, i: number) => number | undefined) => {
    const sa = byName.get(a);
    const sb = byName.get(b);
    if (sa === undefined || sb === undefined) return;
    const xs = Array.from({ length: rounds }, (_, i) => [pick(sa, i), pick(sb, i)] as const).flatMap(([x, y]) => (x === undefined || y === undefined || y === 0 ? [] : [x / y]));
    if (xs.length === 0) return;
    ratios[name] = r2(median(xs));
    ratioRanges[name] = [r2(Math.min(...xs)), r2(Math.max(...xs))];
  };
  const rps = (s: GatewayJwtScenarioResult, i: number) => s.rounds.saturation[i]?.requestsPerSecond;
  const cpuPer = (s: GatewayJwtScenarioResult, i: number) => s.rounds.saturation[i]?.cpuUsPerRequest;
  const p99 = (s: GatewayJwtScenarioResult, i: number) => s.rounds.fixedRate[i]?.p99Ms;
  for (const [a, b] of [['sidecar-jwt', 'node-peer-jwt'], ['sidecar-jwt', 'sidecar-header'], ['node-peer-jwt', 'node-peer-header'], ['sidecar-header', 'node-peer-header'], ['sidecar-jwt', 'node-peer-jwt-documented']] as const) {
    addRatio(`throughput ${a}/${b}`, a, b, rps);
    addRatio(`cpu-efficiency ${a}/${b}`, b, a, cpuPer); // b's CPU per request over a's: higher is better for a
    addRatio(`fixed-rate p99 ${a}/${b}`, a, b, p99); // lower is better for a
  }
  const goals: GatewayJwtBenchResult['goals'] = [];
  const measured = (name: string) => `${ratios[name]}x (rounds ${ratioRanges[name]?.[0]}-${ratioRanges[name]?.[1]})`;
  const tp = ratios['throughput sidecar-jwt/node-peer-jwt'];
  if (tp !== undefined) goals.push({ name: 'jwt key: throughput vs the Node peer verifying the same tokens', goal: '>= 1.5x', measured: measured('throughput sidecar-jwt/node-peer-jwt'), met: tp >= 1.5 });

  return {
    suite: 'gateway-jwt',
    startedAt,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
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

export function gatewayJwtMarkdown(result: GatewayJwtBenchResult): string {
  const load = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
  const lat = (l: Latency) => `${l.p50} / ${l.p99} / ${l.p999}`;
  return [
    `Gateway, jwt key source, ${result.startedAt}: ${result.machine.cpus} CPUs (${result.machine.model}), Node ${result.machine.node}; ` +
      `median of ${result.load.rounds} interleaved rounds of ${result.load.durationS} s per load (order rotated each round); saturation: ${result.load.saturation}; ` +
      `fixed rate: ${result.load.fixedRate}; one ES256 key, tokens minted at start and verified from each gateway's cache after the warm-up; ` +
      `JWKS fetched ${result.jwksFetches} times in the run (jose keeps the key set 10 min, get-jwks a key 60 s, their defaults); load average ${load(result.machine.loadavgAtStart)} at start, ${load(result.machine.loadavgAtEnd)} at end.`,
    '',
    '| target | what | saturation req/s | p50 / p99 / p99.9 ms | CPU µs/req | fixed-rate req/s | p50 / p99 / p99.9 ms | peak RSS MiB | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...result.scenarios.map(
      (s) =>
        `| ${s.name} | ${s.description} | ${s.saturation.requestsPerSecond} | ${lat(s.saturation.latencyMs)} | ${s.saturation.cpuUsPerRequest} | ` +
        `${s.fixedRate?.achieved ?? '-'} | ${s.fixedRate === undefined ? '-' : lat(s.fixedRate.latencyMs)} | ${s.peakRssMiB} | ${s.saturation.errors + (s.fixedRate?.errors ?? 0)} |`,
    ),
    '',
    `Ratios (median of per-round ratios, lowest-highest round in brackets; p99 ratios below 1 favour the first): ${Object.entries(result.ratios)
      .map(([k, v]) => {
        const r = result.ratioRanges[k];
        return `${k} = ${v}${r === undefined ? '' : ` [${r[0]}-${r[1]}]`}`;
      })
      .join('; ')}.`,
    '',
    '| goal | target | measured | met |',
    '|---|---|---|---|',
    ...result.goals.map((g) => `| ${g.name} | ${g.goal} | ${g.measured} | ${g.met ? 'yes' : 'no'} |`),
  ].join('\n');
}

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
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { BARE_PROXY_DESCRIPTION, nginxUnreachable, startBareProxy, startBenchSidecar, startUpstream, unreachable } from './lib/fronts.ts';
import { startJwtIssuer } from './lib/jwt-issuer.ts';
import { ensureLoadgen, runRate, type LoadgenResult } from './lib/loadgen.ts';
import { gatewayGoals, type GatewayBenchResult, type GatewayScenarioResult } from './gateway-report.ts';
import { cpuUs, median, peakRssMiB, r2, rotated, rssSplitKiB, runDelayMs } from './lib/measure.ts';
import { ensureWrk, runWrk, wrkErrors, type WrkResult } from './lib/wrk.ts';
import { ensureNginx, startNginx } from './peers/nginx.ts';

const AUDIENCE = 'bench-service';
const ms = (us: number) => Math.round(us) / 1000;
const wrkRps = (w: WrkResult) => Math.round(w.requests / (w.durationUs / 1e6));

interface Target {
  readonly name: string;
  readonly description: string;
  readonly base: string;
  /** The per-user header lines the load generators send in turn (USER-ID or a bearer token). */
  readonly headerFile: string;
  /** Processes whose CPU counts as the front's (the gateway itself; the upstream for direct). */
  readonly cpuPids: () => (number | undefined)[];
  readonly rssPids: () => (number | undefined)[];
}

/** Refuses to measure a jwt gateway that does not do the job: 401 without or with a forged token, 200 with a real one. */
async function checkJwtGateway(name: string, base: string, token: string): Promise<void> {
  const [head, payload, signature = ''] = token.split('.');
  const forged = `${head}.${payload}.${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
  const status = async (headers: Record<string, string>) => (await fetch(`${base}/healthcheck/ready`, { headers })).status;
  const seen = [await status({}), await status({ authorization: `Bearer ${forged}` }), await status({ authorization: `Bearer ${token}` })];
  if (seen.join() !== '401,401,200') throw new Error(`${name}: no token, a forged token and a valid token answered ${seen.join(', ')}, not 401, 401, 200`);
}

export async function runGatewayBench(log: (line: string) => void = console.log): Promise<GatewayBenchResult> {
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
  writeFileSync(bearerFile, `${issuer.tokens.map((t) => `Authorization: Bearer ${t}`).join('\n')}\n`);

  const redis = await startRedis();
  const upstream = await startUpstream();
  const user = upstream.program;
  const userUrl = upstream.url;
  const jwt = { issuer: issuer.issuer, audience: AUDIENCE, jwksUrl: issuer.jwksUrl, claim: 'sub', algorithms: ['ES256' as const], cacheSize: 10_000 };
  const viaRedis = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-redis');
  const viaMemory = await startBenchSidecar(userUrl, undefined, 'bench-sidecar-memory');
  const viaJwt = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-jwt', { limiter: { ...unreachable, key: 'jwt', keyHeader: 'USER-ID', jwt } });
  const nginx = await startNginx({ upstreamPort: upstream.port, ...nginxUnreachable });
  const startPeer = async (name: string, extra: Record<string, string>) => {
    const port = await freePort();
    const env = { PORT: String(port), UPSTREAM_URL: userUrl, REDIS_URL: redis.url, MAX: String(unreachable.burstCapacity), WINDOW_MS: '1000', ...extra };
    return { url: `http://127.0.0.1:${port}`, program: await startProgram({ entry: 'bench/peers/node-peer.ts', env, waitPort: port, name }) };
  };
  const peer = await startPeer('bench-node-peer', {});
  const peerJwt = await startPeer('bench-node-peer-jwt', { JWT_JWKS_URL: issuer.jwksUrl, JWT_ISSUER: issuer.issuer, JWT_AUDIENCE: AUDIENCE });
  const bare = await startBareProxy(userUrl, 'bench-bare-proxy');

  // The order of a round (rotated from round to round): the Redis sidecar sits between the two
  // anchors of its throughput goals, nginx and the Node peer, and the jwt sidecar beside its Node
  // peer, so that each goal's pair is measured back to back in all rounds but one.
  const one = (name: string, description: string, base: string, pid: () => number | undefined, headerFile = userIdFile): Target => ({ name, description, base, headerFile, cpuPids: () => [pid()], rssPids: () => [pid()] });
  const targets: Target[] = [
    one('direct', 'user service directly (the ceiling)', userUrl, () => user.child.pid),
    { ...one('nginx', 'nginx 1.22 (Debian), proxy_pass + limit_req, 1 worker', nginx.url, () => nginx.workerPid()), rssPids: () => [nginx.child.pid, nginx.workerPid()] },
    one('sidecar-redis', 'Portcullis sidecar, Redis token bucket', viaRedis.url, () => viaRedis.program.child.pid),
    one('node-peer', 'fastify + @fastify/http-proxy + @fastify/rate-limit (Redis store)', peer.url, () => peer.program.child.pid),
    one('bare-proxy', BARE_PROXY_DESCRIPTION, bare.url, () => bare.pid),
    one('sidecar-memory', 'Portcullis sidecar, in-memory token bucket', viaMemory.url, () => viaMemory.program.child.pid),
    one('node-peer-jwt', 'the Node peer + @fastify/jwt with get-jwks (ES256, iss, aud, typ), fast-jwt cache 10,000, key sub', peerJwt.url, () => peerJwt.program.child.pid, bearerFile),
    one('sidecar-jwt', 'Portcullis sidecar, Redis token bucket, key jwt (ES256, iss, aud, typ), cache 10,000, key sub', viaJwt.url, () => viaJwt.program.child.pid, bearerFile),
  ];
  const only = (process.env['BENCH_TARGETS'] ?? '').split(',').filter(Boolean);
  const chosen = only.length > 0 ? targets.filter((t) => only.includes(t.name)) : targets;
  const cpu = (t: Target) => t.cpuPids().reduce((s: number, p) => s + cpuUs(p), 0);
  const sat = new Map<string, { wrk: WrkResult; cpuUsPerRequest: number }[]>(chosen.map((t) => [t.name, []]));
  const fixed = new Map<string, { lg: LoadgenResult; cpuUsPerRequest: number; waitingForCpu: number }[]>(chosen.map((t) => [t.name, []]));
  const waiting = (t: Target) => t.cpuPids().reduce((s: number, p) => s + runDelayMs(p), 0);
  let offered = 0;
  const peakRss = new Map<string, number>();
  const sampled = new Map<string, { rss: number; anon: number; file: number }>();
  const sampler = setInterval(() => {
    for (const t of chosen) {
      const now = t.rssPids().reduce((acc, p) => {
        const x = rssSplitKiB(p);
        return { rss: acc.rss + x.rss, anon: acc.anon + x.anon, file: acc.file + x.file };
      }, { rss: 0, anon: 0, file: 0 });
      if (now.rss > (sampled.get(t.name)?.rss ?? 0)) sampled.set(t.name, now);
    }
  }, 250);
  try {
    for (const t of chosen.filter((x) => x.headerFile === bearerFile)) await checkJwtGateway(t.name, t.base, issuer.tokens[0] ?? '');
    for (const t of chosen) await runWrk({ url: `${t.base}/healthcheck/ready`, connections, threads: 1, durationS: warmupS, rotateHeaderFile: t.headerFile });
    log(`saturation: wrk, ${connections} connections, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`);
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(chosen, round - 1)) {
        const before = cpu(t);
        const wrk = await runWrk({ url: `${t.base}/healthcheck/ready`, connections, threads: 1, durationS, rotateHeaderFile: t.headerFile });
        const cpuUsPerRequest = Math.round(((cpu(t) - before) / Math.max(1, wrk.requests)) * 10) / 10;
        sat.get(t.name)?.push({ wrk, cpuUsPerRequest });
        log(`  round ${round} ${t.name}: ${wrkRps(wrk)} req/s, p50 ${ms(wrk.latencyUs.p50)} ms, p99 ${ms(wrk.latencyUs.p99)} ms, ${cpuUsPerRequest} µs CPU/request, load ${os.loadavg()[0]?.toFixed(1)}`);
      }
    }
    const reference = sat.get('sidecar-redis') ?? sat.get(chosen[0]?.name ?? '') ?? [];
    offered = Math.max(100, Math.round(median(reference.map((r) => wrkRps(r.wrk))) / 2 / 50) * 50);
    log(`fixed rate: ${offered} req/s offered (half of sidecar-redis' saturation), open model, ${rounds} interleaved rounds of ${durationS} s, order rotated each round`);
    for (let round = 1; round <= rounds; round++) {
      for (const t of rotated(chosen, round - 1)) {
        const before = cpu(t);
        const waitedBefore = waiting(t);
        const lg = await runRate({ url: `${t.base}/healthcheck/ready`, rate: offered, durationS, connections, rotateHeaderFile: t.headerFile });
        const cpuUsPerRequest = Math.round(((cpu(t) - before) / Math.max(1, lg.completed)) * 10) / 10;
        const waitingForCpu = Math.round(((waiting(t) - waitedBefore) / Math.max(1, lg.elapsedUs / 1000)) * 100) / 100;
        fixed.get(t.name)?.push({ lg, cpuUsPerRequest, waitingForCpu });
        log(
          `  round ${round} ${t.name}: ${Math.round(lg.achievedRate)} req/s, p50 ${ms(lg.latencyUs.p50)} ms, p99 ${ms(lg.latencyUs.p99)} ms, p99.9 ${ms(lg.latencyUs.p999)} ms, ` +
            `${cpuUsPerRequest} µs CPU/request, waited for a CPU ${Math.round(waitingForCpu * 100)} % of the time`,
        );
      }
    }
    for (const t of chosen) peakRss.set(t.name, Math.round(t.rssPids().reduce((s: number, p) => s + peakRssMiB(p), 0) * 10) / 10);
  } finally {
    clearInterval(sampler);
    await Promise.allSettled([viaRedis.program.stop(), viaMemory.program.stop(), viaJwt.program.stop(), nginx.stop(), peer.program.stop(), peerJwt.program.stop(), bare.stop()]);
    await user.stop();
    await redis.stop();
    await issuer.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const scenarios: GatewayScenarioResult[] = chosen.map((t) => {
    const s = sat.get(t.name) ?? [];
    const f = fixed.get(t.name) ?? [];
    const midS = [...s].sort((a, b) => wrkRps(a.wrk) - wrkRps(b.wrk))[Math.floor(s.length / 2)];
    const midF = [...f].sort((a, b) => a.lg.latencyUs.p99 - b.lg.latencyUs.p99)[Math.floor(f.length / 2)];
    const direct = fixed.get('direct') ?? [];
    const added = t.name === 'direct' ? [] : f.flatMap((r, i) => {
      const d = direct[i];
      return d === undefined ? [] : [(r.lg.latencyUs.p99 - d.lg.latencyUs.p99) / 1000];
    });
    const peak = sampled.get(t.name) ?? { rss: 0, anon: 0, file: 0 };
    const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
    const lgErr = (l: LoadgenResult) => l.errors + l.dropped + Object.entries(l.statuses).reduce((n, [code, c]) => n + (code === '200' ? 0 : c), 0);
    return {
      name: t.name,
      description: t.description,
      saturation: {
        requestsPerSecond: median(s.map((r) => wrkRps(r.wrk))),
        latencyMs: midS === undefined ? { p50: 0, p99: 0, p999: 0, max: 0 } : { p50: ms(midS.wrk.latencyUs.p50), p99: ms(midS.wrk.latencyUs.p99), p999: ms(midS.wrk.latencyUs.p999), max: ms(midS.wrk.latencyUs.max) },
        cpuUsPerRequest: median(s.map((r) => r.cpuUsPerRequest)),
        errors: s.reduce((n, r) => n + wrkErrors(r.wrk), 0),
      },
      fixedRate: {
        offered,
        achieved: Math.round(median(f.map((r) => r.lg.achievedRate))),
        latencyMs: midF === undefined ? { p50: 0, p99: 0, p999: 0, max: 0 } : { p50: ms(midF.lg.latencyUs.p50), p99: ms(midF.lg.latencyUs.p99), p999: ms(midF.lg.latencyUs.p999), max: ms(midF.lg.latencyUs.max) },
        cpuUsPerRequest: median(f.map((r) => r.cpuUsPerRequest)),
        waitingForCpu: median(f.map((r) => r.waitingForCpu)),
        ...(added.length > 0 ? { p99AddedMs: r2(median(added)) } : {}),
        errors: f.reduce((n, r) => n + lgErr(r.lg), 0),
      },
      peakRssMiB: peakRss.get(t.name) ?? 0,
      sampledPeak: { rssMiB: mib(peak.rss), anonMiB: mib(peak.anon), fileMiB: mib(peak.file) },
      rounds: {
        saturation: s.map((r) => ({ requestsPerSecond: wrkRps(r.wrk), p50Ms: ms(r.wrk.latencyUs.p50), p99Ms: ms(r.wrk.latencyUs.p99), p999Ms: ms(r.wrk.latencyUs.p999), cpuUsPerRequest: r.cpuUsPerRequest })),
        fixedRate: f.map((r) => ({ achieved: Math.round(r.lg.achievedRate), p50Ms: ms(r.lg.latencyUs.p50), p99Ms: ms(r.lg.latencyUs.p99), p999Ms: ms(r.lg.latencyUs.p999), cpuUsPerRequest: r.cpuUsPerRequest, waitingForCpu: r.waitingForCpu })),
      },
    };
  });

  const { ratios, ratioRanges, goals } = gatewayGoals(scenarios, rounds, offered);

  return {
    suite: 'gateway',
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

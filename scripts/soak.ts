// `make soak`: soak and faults, outside the test tiers (a long run with sleeps is a measurement
// campaign, not a test). For SOAK_SECONDS (600 in `make soak`; `node scripts/soak.ts` alone: 60):
//   gateway: many users (some far over their limit) through two sidecars sharing one route and a
//   real redis-server (onStoreError allow) plus a third sidecar on a deny route;
//   sign-in: OAuth code flows with PKCE, code replays and refresh rotations against two
//   auth-server replicas sharing the same Redis;
// while, on a schedule, Redis is SIGKILLed and restarted, the upstream is restarted, the
// sidecar's config file is changed, and one auth-server replica is SIGKILLed mid-run (and later
// restarted).
// Asserted afterwards from the recorded requests: no process exits on its own; no request hangs
// past its timeout; allow and deny hold exactly while Redis is down; over-admission is zero in
// every Redis-up window (admitted <= burstCapacity + replenishRate x window, per user); light
// users are never limited; no code or refresh token is accepted twice; memory does not grow: the
// V8 heap in use after a forced full GC (read through the inspector, so it counts live objects,
// not garbage or the heap V8 chose to reserve) at start, mid-run and end, with almost no growth
// over the second half; RSS is reported at the same points, and the sidecars, run as deployed (the
// bundle with the pod's V8 flags, from `make bundles`), stay under their container's memory limit
// throughout. A JSON report goes to test-results/soak-report.json; the exit status is 1 when any
// invariant failed, and the report's `problems` lists them.
import { mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { SIDECAR_ENTRY, SIDECAR_ENV, SIDECAR_MEMORY_LIMIT_MIB } from '../operator/resources/route/deployment.ts';
import type { SidecarConfigInput } from '../lib/config/sidecar.ts';
import { connectInspector, type Inspector } from '../test/harness/inspector.ts';
import { freePort } from '../test/harness/ports.ts';
import { repoRoot, startProgram, startSidecar, type Program, type RunningSidecar } from '../test/harness/programs.ts';
import { MiB, peakRssBytes, rssBytes } from '../test/harness/raw-http.ts';
import { startRedis, type RedisServer } from '../test/harness/redis.ts';
import { authorize, pkce, tokenRequest } from '../test/harness/auth-flow.ts';
import { AUTH_SERVER_AS_DEPLOYED, SECRETS, startStack, type Stack } from '../test/harness/auth-stack.ts';

const SOAK_SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const DURATION_MS = SOAK_SECONDS * 1000;
/** Per-request client deadline: anything slower is a hang. */
const CLIENT_TIMEOUT_MS = 10_000;
/** No request may take longer than the sidecar's slowest timeout (upstream 3 s) plus a margin. */
const MAX_LATENCY_MS = 6_000;
/**
 * Each sidecar must decide again within this long after Redis answers PING. After a plain restart
 * the limit is 2 s (sidecar-redis-fault.test.ts); here Redis replays an append-only file and ioredis, having connected during
 * the replay (-LOADING), waits out Redis' loading ETA before its next ready check.
 */
const RECOVERY_BOUND_MS = 5_000;
const RULE = { replenishRate: 5, burstCapacity: 10, requestedTokens: 1 };
/**
 * The live heap (after a forced full GC) may grow this much from the warm start (JIT feedback,
 * pools and caches filling up, a reload's new runtime)...
 */
const HEAP_MARGIN = 24 * MiB;
/** ...but only this much over the second half of the run, once warm: growth there would be a leak. */
const HEAP_SECOND_HALF_MARGIN = 8 * MiB;
/** The sidecar container's memory limit (operator/resources/route/deployment.ts): its RSS must stay under it. */
const SIDECAR_RSS_LIMIT = SIDECAR_MEMORY_LIMIT_MIB * MiB;
/** Every process is started with its inspector on a free port, for the heap readings. */
const INSPECT = '--inspect=127.0.0.1:0';
/** The auth server may answer 503 (store unavailable) until this long after Redis returns. */
const AUTH_RECOVERY_MS = 10_000;

interface GatewayRecord {
  readonly user: string;
  readonly route: 'allow' | 'deny';
  readonly kind: 'heavy' | 'light';
  readonly via: string;
  readonly send: number;
  readonly recv: number;
  readonly status: number | 'timeout' | 'error';
  /** The limiter decided (its headers are present). */
  readonly decided: boolean;
  readonly spring: boolean;
}

interface Interval {
  start: number;
  end: number;
  /** Redis only: when its restart began (before that it was surely down). */
  restartAt?: number;
}

const now = () => performance.now();

/**
 * Resolves once Redis answers PING with PONG. Accepting connections is not enough: while it
 * replays its append-only file after a restart, Redis answers every command with -LOADING.
 */
async function redisAnswers(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const reply = await new Promise<string>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1' });
      let text = '';
      socket.setTimeout(1000, () => socket.destroy());
      socket.on('data', (c: Buffer) => {
        text += c.toString('latin1');
        if (text.includes('\r\n')) socket.end();
      });
      socket.on('close', () => resolve(text));
      socket.on('error', () => resolve(''));
      socket.write('PING\r\n');
    });
    if (reply.startsWith('+PONG')) return;
    if (performance.now() > deadline) throw new Error(`redis on ${port} still answers ${JSON.stringify(reply.slice(0, 60))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const overlaps = (a: Interval, s: number, e: number) => s <= a.end && e >= a.start;
const toMiB = (bytes: number | undefined) => Number(((bytes ?? 0) / MiB).toFixed(1));

{
  let redis: RedisServer;
  let upstreamPort: number;
  let upstream: Program;
  const upstreamPrograms: Program[] = [];
  let allowA: RunningSidecar;
  let allowB: RunningSidecar;
  let deny: RunningSidecar;
  let stack: Stack;
  const replicaRestarts: Program[] = [];
  /** Inspectors of the processes whose memory is checked, by report name. */
  const inspectors: Record<string, Inspector> = {};
  const authServer0 = () => stack.programs.find((p) => p.name === 'auth-server-0') as Program;

  /**
   * (Re)starts the upstream on its fixed port and waits until it really serves. While it is down,
   * another process on this shared machine may briefly hold the port (a free-port probe): then
   * waitPort sees that listener, our process dies with EADDRINUSE, and we try again.
   */
  const startUpstream = async () => {
    for (let attempt = 1; ; attempt++) {
      const p = await startProgram({
        name: 'user-service',
        entry: 'services/user-service/main.ts',
        env: { PORT: String(upstreamPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
        waitPort: upstreamPort,
      }).catch(() => undefined);
      if (p !== undefined) upstreamPrograms.push(p);
      await sleep(300);
      const serving = p !== undefined && !p.exited() && (await fetch(`http://127.0.0.1:${upstreamPort}/healthcheck/ready`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false));
      if (serving) {
        upstream = p;
        return;
      }
      await p?.stop('SIGKILL');
      if (attempt >= 40) throw new Error(`the upstream did not come back on port ${upstreamPort}`);
      await sleep(250);
    }
  };

  const sidecarConfig = (route: string, policy: 'allow' | 'deny', spring: boolean): Omit<SidecarConfigInput, 'listen' | 'admin'> => ({
    upstream: { url: `http://127.0.0.1:${upstreamPort}`, timeoutMs: 3000, connectTimeoutMs: 1000 },
    route: { id: route },
    limiter: { ...RULE, onStoreError: policy, headers: { fields: true, draft: false, spring } },
    // A generous command timeout: fsync-always Redis on a shared 2-core machine can be slow, and a
    // timeout while Redis is up would fail open (this suite counts that as over-admission).
    redis: { url: redis.url, commandTimeoutMs: 1000, connectTimeoutMs: 1000 },
    logLevel: 'info',
  });

  const setUp = async () => {
    // AOF with fsync on every write: a SIGKILL loses no acknowledged write, so consumed codes and
    // rotated refresh tokens stay consumed across the restart.
    redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    upstreamPort = await freePort();
    await startUpstream();
    // The sidecars run as the operator deploys them: the bundle, with the container's environment.
    const deployed = { entry: SIDECAR_ENTRY, env: { ...SIDECAR_ENV, NODE_OPTIONS: `${SIDECAR_ENV.NODE_OPTIONS} ${INSPECT}` } };
    allowA = await startSidecar(sidecarConfig('soak', 'allow', false), { ...deployed, name: 'sidecar-soak-a' });
    allowB = await startSidecar(sidecarConfig('soak', 'allow', false), { ...deployed, name: 'sidecar-soak-b' });
    deny = await startSidecar(sidecarConfig('soak-deny', 'deny', false), { ...deployed, name: 'sidecar-soak-deny' });
    stack = await startStack({
      redisUrl: redis.url,
      replicas: 2,
      authEnv: { AUTH_SIGNIN_USER_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000', AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_BURST: '1000000', AUTH_SIGNIN_ADDRESS_BURST: '1000000', NODE_OPTIONS: INSPECT },
    });
    const watched = { 'sidecar-a': allowA.program, 'sidecar-b': allowB.program, 'sidecar-deny': deny.program, 'auth-server-0': authServer0() };
    for (const [k, p] of Object.entries(watched)) inspectors[k] = await connectInspector(p);
  };

  const tearDown = async () => {
    for (const i of Object.values(inspectors)) i.close();
    await Promise.allSettled([allowA?.program.stop(), allowB?.program.stop(), deny?.program.stop(), upstream?.stop(), ...replicaRestarts.map((p) => p.stop())]);
    await stack?.stop();
    await redis?.stop();
  };

  /** Runs the soak; answers what did not hold (empty when every invariant held). */
  const soak = async (): Promise<string[]> => {
    const t0 = now();
    const end = t0 + DURATION_MS;
    const gateway: GatewayRecord[] = [];
    const redisDown: Interval[] = [];
    const upstreamDown: Interval[] = [];
    const configChanges: { at: number; spring: boolean }[] = [];
    const replicaDown: Interval[] = [];
    let springOnA = false;
    const pids = () => ({
      'sidecar-a': allowA.program.child.pid as number,
      'sidecar-b': allowB.program.child.pid as number,
      'sidecar-deny': deny.program.child.pid as number,
      'auth-server-0': authServer0().child.pid as number,
    });
    /** RSS and live heap (after a full GC) of every watched process, bytes. */
    const sampleMemory = async () => {
      const rss: Record<string, number> = {};
      const heap: Record<string, number> = {};
      for (const [k, pid] of Object.entries(pids())) {
        rss[k] = rssBytes(pid);
        heap[k] = await (inspectors[k] as Inspector).heapUsedAfterGc();
      }
      return { rss, heap };
    };
    // Warm up before the RSS baseline.
    for (let i = 0; i < 30; i++) await fetch(`${allowA.url}/healthcheck/ready`, { headers: { 'USER-ID': `warm-${i}` } }).then((r) => r.text());
    await authorize({ issuer: stack.authUrls[0] as string, clientId: 'demo-client', redirectUri: stack.redirectUri, challenge: pkce().challenge });
    const memStart = await sampleMemory();

    // ---- gateway traffic ----------------------------------------------------------------------
    const users: { id: string; route: 'allow' | 'deny'; kind: 'heavy' | 'light'; periodMs: number }[] = [
      ...Array.from({ length: 6 }, (_, i) => ({ id: `heavy-${i}`, route: 'allow' as const, kind: 'heavy' as const, periodMs: 70 })),
      ...Array.from({ length: 20 }, (_, i) => ({ id: `light-${i}`, route: 'allow' as const, kind: 'light' as const, periodMs: 1000 })),
      ...Array.from({ length: 3 }, (_, i) => ({ id: `deny-heavy-${i}`, route: 'deny' as const, kind: 'heavy' as const, periodMs: 100 })),
      ...Array.from({ length: 3 }, (_, i) => ({ id: `deny-light-${i}`, route: 'deny' as const, kind: 'light' as const, periodMs: 1000 })),
    ];
    const userLoop = async (u: (typeof users)[number], index: number) => {
      let n = index;
      await sleep((index * 37) % 500);
      while (now() < end) {
        const sidecar = u.route === 'deny' ? deny : n++ % 2 === 0 ? allowA : allowB;
        const send = now();
        let status: GatewayRecord['status'];
        let decided = false;
        let spring = false;
        try {
          const res = await fetch(`${sidecar.url}/healthcheck/ready`, { headers: { 'USER-ID': u.id }, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
          await res.arrayBuffer();
          status = res.status;
          decided = res.headers.has('ratelimit-remaining');
          spring = res.headers.has('x-ratelimit-burst-capacity');
        } catch (err) {
          status = (err as Error).name === 'TimeoutError' ? 'timeout' : 'error';
        }
        const recv = now();
        gateway.push({ user: u.id, route: u.route, kind: u.kind, via: sidecar.program.name, send, recv, status, decided, spring });
        await sleep(u.periodMs - (recv - send));
      }
    };

    // ---- OAuth traffic ------------------------------------------------------------------------
    /** ms since the last Redis restart when an auth server answered 503 (0 while Redis was down). */
    const auth503LagMs: number[] = [];
    const oauth = { flows: 0, interrupted: 0, exchanges: 0, codeReplaysRejected: 0, codeDoubleUse: 0, refreshRotations: 0, refreshReplaysRejected: 0, refreshDoubleUse: 0, server5xx: [] as string[], lostInFaultWindow: 0 };
    const aliveReplicas = () => stack.authUrls.filter((_, i) => !(i === 1 && replicaDown.some((w) => w.end === Infinity)));
    /** Retries a token call while the answer is 503 (Redis down) or the replica is unreachable. */
    const tokenCall = async (body: Record<string, string>, preferred: number) => {
      const deadline = now() + 20_000;
      let attempt = preferred;
      for (;;) {
        const replicas = aliveReplicas();
        const url = replicas[attempt++ % replicas.length] as string;
        try {
          const r = await tokenRequest(url, body);
          if (r.status >= 500) {
            if (r.status !== 503) oauth.server5xx.push(`token ${r.status} ${JSON.stringify(r.json)}`);
            else {
              // 503 temporarily_unavailable is the auth server's store-error policy: expected while
              // Redis is down and until its client has reconnected (ioredis backs off up to 2 s).
              const t = now();
              const last = redisDown.filter((w) => w.start <= t).at(-1);
              const lag = last === undefined ? Infinity : last.end === Infinity ? 0 : t - last.end;
              auth503LagMs.push(lag);
              if (lag > AUTH_RECOVERY_MS) oauth.server5xx.push(`token 503 ${lag === Infinity ? 'with no Redis fault before it' : `${lag.toFixed(0)} ms after Redis returned`}`);
            }
          } else return r;
        } catch {
          // connection refused: the replica was killed
        }
        if (now() > deadline) return undefined;
        await sleep(200);
      }
    };
    const flowLoop = async (worker: number) => {
      let i = worker;
      while (now() < end) {
        const started = now();
        i++;
        try {
          const replicas = aliveReplicas();
          const issuer = replicas[i % replicas.length] as string;
          const { verifier, challenge } = pkce();
          const { location } = await authorize({ issuer, clientId: 'demo-client', redirectUri: stack.redirectUri, challenge, state: `s${i}` });
          const code = location.searchParams.get('code');
          if (code === null) throw new Error(`no code: ${location}`);
          oauth.flows++;
          const body = { grant_type: 'authorization_code', code, redirect_uri: stack.redirectUri, client_id: 'demo-client', client_secret: SECRETS.post, code_verifier: verifier };
          const first = await tokenCall(body, i + 1);
          if (first === undefined || first.status !== 200) {
            // A 503 during a Redis fault may have consumed the code before the answer was lost.
            oauth.lostInFaultWindow++;
            continue;
          }
          oauth.exchanges++;
          const replay = await tokenCall(body, i);
          if (replay?.status === 200) oauth.codeDoubleUse++;
          else if (replay?.status === 400 && replay.json.error === 'invalid_grant') oauth.codeReplaysRejected++;
          // The replay revoked the tokens of the first exchange (RFC 6749 4.1.2): its refresh
          // token must not work either. Rotate a fresh family instead.
          const refresh = String(first.json.refresh_token);
          const revoked = await tokenCall({ grant_type: 'refresh_token', refresh_token: refresh, client_id: 'demo-client', client_secret: SECRETS.post }, i);
          if (revoked?.status === 200) oauth.refreshDoubleUse++;
          // A second flow to exercise rotation and reuse detection.
          const p2 = pkce();
          const second = await authorize({ issuer, clientId: 'demo-client', redirectUri: stack.redirectUri, challenge: p2.challenge });
          const code2 = second.location.searchParams.get('code');
          if (code2 === null) throw new Error('no second code');
          const t2 = await tokenCall({ ...body, code: code2, code_verifier: p2.verifier }, i);
          if (t2?.status !== 200) {
            oauth.lostInFaultWindow++;
            continue;
          }
          const rt1 = String(t2.json.refresh_token);
          const rotated = await tokenCall({ grant_type: 'refresh_token', refresh_token: rt1, client_id: 'demo-client', client_secret: SECRETS.post }, i + 1);
          if (rotated?.status !== 200) {
            oauth.lostInFaultWindow++;
            continue;
          }
          oauth.refreshRotations++;
          const reuse = await tokenCall({ grant_type: 'refresh_token', refresh_token: rt1, client_id: 'demo-client', client_secret: SECRETS.post }, i);
          if (reuse?.status === 200) oauth.refreshDoubleUse++;
          else if (reuse?.status === 400) oauth.refreshReplaysRejected++;
        } catch {
          oauth.interrupted++; // a replica died or Redis was down mid-flow: start again
        }
        await sleep(500 - (now() - started));
      }
    };

    // ---- faults -------------------------------------------------------------------------------
    const faults: string[] = [];
    const faultLoop = async () => {
      const plan = ['redis', 'upstream', 'config', 'redis', 'config', 'upstream'];
      let k = 0;
      let replicaKilled = false;
      let replicaRestarted = false;
      while (now() < end - 8000) {
        await sleep(Math.min(6000, end - 8000 - now()));
        if (now() >= end - 8000) break;
        if (!replicaKilled && now() - t0 > DURATION_MS / 2) {
          replicaKilled = true;
          const victim = stack.programs.find((p) => p.name === 'auth-server-1') as Program;
          replicaDown.push({ start: now(), end: Infinity });
          victim.child.kill('SIGKILL');
          faults.push('auth-server replica SIGKILL');
          continue;
        }
        if (replicaKilled && !replicaRestarted && now() - t0 > DURATION_MS / 2 + 10_000) {
          replicaRestarted = true;
          const port = new URL(stack.authUrls[1] as string).port;
          replicaRestarts.push(
            await startProgram({
              name: 'auth-server-1-restarted',
              entry: AUTH_SERVER_AS_DEPLOYED.entry,
              waitPort: Number(port),
              env: {
                ...AUTH_SERVER_AS_DEPLOYED.env,
                PORT: port, HOST: '127.0.0.1', AUTH_METRICS_PORT: '0', AUTH_ISSUER: stack.issuer, AUTH_CLIENTS_FILE: stack.clientsFile,
                AUTH_USERS_FILE: path.join(stack.dir, 'users.json'), AUTH_KEYS_FILE: path.join(stack.dir, 'keys.json'),
                AUTH_FILE_CHECK_MS: '100', LOG_LEVEL: 'info', REDIS_URL: redis.url,
                AUTH_SIGNIN_USER_BURST: '1000000', AUTH_SIGNIN_ADDRESS_BURST: '1000000', AUTH_SIGNIN_USER_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000', AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000',
              },
            }),
          );
          (replicaDown[0] as Interval).end = now();
          faults.push('auth-server replica restarted');
          continue;
        }
        const fault = plan[k++ % plan.length];
        if (fault === 'redis') {
          const w: Interval = { start: now(), end: Infinity };
          redisDown.push(w);
          await redis.kill();
          await sleep(2000);
          w.restartAt = now();
          await redis.start();
          await redisAnswers(redis.port);
          w.end = now();
          faults.push('redis SIGKILL + restart');
        } else if (fault === 'upstream') {
          const w: Interval = { start: now(), end: Infinity };
          upstreamDown.push(w);
          await upstream.stop('SIGTERM');
          await sleep(1000);
          await startUpstream();
          w.end = now();
          faults.push('upstream restart');
        } else {
          springOnA = !springOnA;
          allowA.write({ ...allowA.config, limiter: { ...RULE, onStoreError: 'allow', headers: { fields: true, draft: false, spring: springOnA } } });
          configChanges.push({ at: now(), spring: springOnA });
          faults.push(`sidecar config change (spring headers ${springOnA ? 'on' : 'off'})`);
        }
      }
    };

    let memMid: Awaited<ReturnType<typeof sampleMemory>> = { rss: {}, heap: {} };
    const midSample = sleep(DURATION_MS / 2).then(async () => {
      memMid = await sampleMemory();
    });
    await Promise.all([...users.map(userLoop), flowLoop(0), flowLoop(1), faultLoop(), midSample]);

    // ---- invariants ---------------------------------------------------------------------------
    const memEnd = await sampleMemory();
    // VmHWM is kept lazily by the kernel: a sample above it still counts as the peak.
    const rssPeak = Object.fromEntries(Object.entries(pids()).map(([k, pid]) => [k, Math.max(peakRssBytes(pid), memStart.rss[k] ?? 0, memMid.rss[k] ?? 0, memEnd.rss[k] ?? 0)]));
    const problems: string[] = [];
    const inAny = (ws: Interval[], s: number, e: number, padBefore = 0, padAfter = 0) => ws.some((w) => overlaps({ start: w.start - padBefore, end: w.end + padAfter }, s, e));

    // No process exited on its own (the restarted upstream instances exited on our SIGTERM).
    for (const p of [allowA.program, allowB.program, deny.program, authServer0()]) {
      if (p.exited()) problems.push(`${p.name} exited`);
    }

    // When each sidecar decided again after each Redis restart (its first limiter answer sent
    // after Redis answered PING): until then its onStoreError policy applies, and the lag is bounded.
    const recovered = new Map<Interval, Map<string, number>>();
    let maxRecoveryMs = 0;
    for (const w of redisDown) {
      const bySidecar = new Map<string, number>();
      for (const via of ['sidecar-soak-a', 'sidecar-soak-b', 'sidecar-soak-deny']) {
        const first = gateway.filter((r) => r.via === via && r.decided && r.send >= w.end).reduce((m, r) => Math.min(m, r.recv), Infinity);
        bySidecar.set(via, first);
        if (Number.isFinite(first)) maxRecoveryMs = Math.max(maxRecoveryMs, first - w.end);
        else if (w.end < end - 5000) problems.push(`${via} never decided again after the Redis restart at ${((w.end - t0) / 1000).toFixed(1)} s`);
      }
      recovered.set(w, bySidecar);
    }
    if (maxRecoveryMs > RECOVERY_BOUND_MS) problems.push(`a sidecar took ${maxRecoveryMs.toFixed(0)} ms to decide again after Redis answered`);

    // No hang, no 500, policies exact.
    let maxLatency = 0;
    const byStatus: Record<string, number> = {};
    for (const r of gateway) {
      const latency = r.recv - r.send;
      maxLatency = Math.max(maxLatency, latency);
      byStatus[String(r.status)] = (byStatus[String(r.status)] ?? 0) + 1;
      const tag = `${r.user} via ${r.via} at ${((r.send - t0) / 1000).toFixed(2)} s`;
      if (r.status === 'timeout' || latency > MAX_LATENCY_MS) problems.push(`${tag}: took ${latency.toFixed(0)} ms (${r.status})`);
      if (r.status === 'error') problems.push(`${tag}: connection error`);
      const redisOut = redisDown.some((w) => overlaps({ start: w.start, end: recovered.get(w)?.get(r.via) ?? Infinity }, r.send, r.recv));
      const upstreamOut = inAny(upstreamDown, r.send, r.recv, 0, 2000);
      const surelyDown = redisDown.some((w) => r.send > w.start + 500 && r.recv < (w.restartAt ?? w.end));
      if (typeof r.status === 'number') {
        if (r.status === 500) problems.push(`${tag}: 500`);
        if ((r.status === 502 || r.status === 504) && !upstreamOut) problems.push(`${tag}: ${r.status} while the upstream was up`);
        if (r.status === 503 && !(r.route === 'deny' && redisOut)) problems.push(`${tag}: 503 outside a Redis fault on the ${r.route} route`);
        if (surelyDown && r.route === 'deny' && r.status !== 503) problems.push(`${tag}: deny route answered ${r.status} while Redis was down`);
        if (surelyDown && r.route === 'allow' && (r.decided || (r.status !== 200 && !upstreamOut))) problems.push(`${tag}: allow route answered ${r.status} (decided ${r.decided}) while Redis was down`);
        if (!redisOut && !upstreamOut && !(r.decided && (r.status === 200 || r.status === 429))) problems.push(`${tag}: ${r.status} without a limiter decision while Redis was up`);
        if (r.kind === 'light' && r.status === 429) problems.push(`${tag}: a light user was limited`);
      }
    }

    // Over-admission: per user, per Redis-up window, decided admissions against the exact bound.
    const upWindows: Interval[] = [];
    let from = t0;
    for (const w of redisDown) {
      upWindows.push({ start: from, end: w.start });
      from = w.end;
    }
    upWindows.push({ start: from, end: Infinity });
    let windowsChecked = 0;
    let admittedTotal = 0;
    let maxFill = 0;
    for (const u of users) {
      for (const w of upWindows) {
        // The decision happened between send and recv while Redis was up, so in a window that
        // [send, recv] overlaps (our clock sees a restart up to ~50 ms late: 200 ms of slack).
        const admitted = gateway.filter((r) => r.user === u.id && r.decided && r.status === 200 && overlaps({ start: w.start - 200, end: w.end }, r.send, r.recv));
        if (admitted.length === 0) continue;
        windowsChecked++;
        admittedTotal += admitted.length;
        // Elapsed Redis time between the first and last decision is at most this (our clock sees
        // the restart up to ~50 ms late, hence the 200 ms of slack on the start).
        const span = Math.max(...admitted.map((r) => r.recv)) - Math.min(...admitted.map((r) => Math.max(r.send, w.start - 200)));
        const bound = Math.floor((RULE.burstCapacity + (RULE.replenishRate * span) / 1000) / RULE.requestedTokens);
        if (u.kind === 'heavy') maxFill = Math.max(maxFill, admitted.length / bound);
        if (admitted.length > bound) problems.push(`${u.id}: ${admitted.length} admitted in a Redis-up window of ${span.toFixed(0)} ms, bound ${bound}`);
      }
    }

    // Config changes reached sidecar A within 3 s, and B never changed.
    for (const [idx, c] of configChanges.entries()) {
      const until = configChanges[idx + 1]?.at ?? Infinity;
      const seen = gateway.filter((r) => r.via === 'sidecar-soak-a' && r.decided && r.send > c.at + 3000 && r.recv < until);
      const wrong = seen.filter((r) => r.spring !== c.spring);
      if (wrong.length > 0) problems.push(`config change #${idx + 1} (spring ${c.spring}) not applied on ${wrong.length} of ${seen.length} responses after 3 s`);
    }
    if (gateway.some((r) => r.via !== 'sidecar-soak-a' && r.spring)) problems.push('a sidecar whose config did not change sent Spring headers');

    // OAuth: nothing accepted twice, no unexplained 5xx.
    if (oauth.codeDoubleUse > 0) problems.push(`${oauth.codeDoubleUse} authorization code(s) accepted twice`);
    if (oauth.refreshDoubleUse > 0) problems.push(`${oauth.refreshDoubleUse} refresh token(s) accepted twice (or after their family was revoked)`);
    problems.push(...oauth.server5xx);
    for (const p of stack.programs.concat(replicaRestarts)) {
      for (const line of p.lines) if (/"statusCode":500/.test(line)) problems.push(`${p.name} logged a 500: ${line.slice(0, 200)}`);
    }

    // Memory: the live heap does not grow (a leak would show there first); the sidecars' RSS stays
    // under their container limit at its peak.
    const mib = (b: number | undefined) => `${((b ?? 0) / MiB).toFixed(1)} MiB`;
    for (const [k, start] of Object.entries(memStart.heap)) {
      const end = memEnd.heap[k] as number;
      const mid = memMid.heap[k] as number;
      if (end - start > HEAP_MARGIN) problems.push(`${k}: live heap grew from ${mib(start)} to ${mib(end)}`);
      if (end - mid > HEAP_SECOND_HALF_MARGIN) problems.push(`${k}: live heap grew from ${mib(mid)} at mid-run to ${mib(end)}`);
      if (k.startsWith('sidecar') && (rssPeak[k] as number) > SIDECAR_RSS_LIMIT) problems.push(`${k}: peak RSS ${mib(rssPeak[k])} is over the container limit ${mib(SIDECAR_RSS_LIMIT)}`);
    }

    const report = {
      seconds: SOAK_SECONDS,
      at: new Date().toISOString(),
      rule: RULE,
      faults,
      redisDownSeconds: redisDown.map((w) => [Number(((w.start - t0) / 1000).toFixed(2)), Number(((w.end - t0) / 1000).toFixed(2))]),
      gateway: { requests: gateway.length, byStatus, maxLatencyMs: Math.round(maxLatency), maxRecoveryMsAfterRedisAnswered: Math.round(maxRecoveryMs), windowsChecked, admittedByTheLimiter: admittedTotal, heavyUsersMaxFillOfBound: Number(maxFill.toFixed(3)) },
      oauth: { ...oauth, auth503: auth503LagMs.length, auth503MaxMsAfterRedisReturned: Math.round(Math.max(0, ...auth503LagMs.filter((x) => Number.isFinite(x)))) },
      memoryMiB: Object.fromEntries(
        Object.keys(memStart.rss).map((k) => {
          const at = (m: Awaited<ReturnType<typeof sampleMemory>>) => ({ rss: toMiB(m.rss[k]), liveHeap: toMiB(m.heap[k]) });
          return [k, { start: at(memStart), mid: at(memMid), end: at(memEnd), peakRss: toMiB(rssPeak[k]) }];
        }),
      ),
      memoryBoundsMiB: { liveHeapFromStart: HEAP_MARGIN / MiB, liveHeapSecondHalf: HEAP_SECOND_HALF_MARGIN / MiB, sidecarPeakRss: SIDECAR_RSS_LIMIT / MiB },
      sidecarRuns: { entry: SIDECAR_ENTRY, env: SIDECAR_ENV },
      problems: problems.length,
      firstProblems: problems.slice(0, 30),
    };
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
    writeFileSync(path.join(repoRoot, 'test-results', 'soak-report.json'), JSON.stringify(report, null, 2));
    console.log(`soak report: ${JSON.stringify(report, null, 2)}`);

    return [
      ...problems,
      ...(faults.some((f) => f.startsWith('redis')) ? [] : ['Redis was never killed']),
      ...(oauth.exchanges > 0 ? [] : ['no code was exchanged']),
      ...(oauth.codeReplaysRejected > 0 ? [] : ['no code replay was tried and rejected']),
      ...(oauth.refreshReplaysRejected > 0 ? [] : ['no refresh replay was tried and rejected']),
      ...(maxFill > 0.5 ? [] : [`heavy users did not push against their limit (fill ${maxFill})`]), // the load really tested the limit
    ];
  };

  try {
    await setUp();
    const failed = await soak();
    if (failed.length > 0) {
      console.error(`soak: ${failed.length} invariant(s) did not hold:\n${failed.slice(0, 30).join('\n')}`);
      process.exitCode = 1;
    } else console.log(`soak: every invariant held over ${SOAK_SECONDS} s (test-results/soak-report.json)`);
  } finally {
    await tearDown();
  }
}

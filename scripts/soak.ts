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
// The parts are in scripts/soak/: the processes, the traffic, the faults, and the invariants.
import { authorize, pkce } from '../test/harness/auth-flow.ts';
import { DURATION_MS, now, SOAK_SECONDS, sleep, type Timeline } from './soak/common.ts';
import { faultLoop } from './soak/faults.ts';
import { checkInvariants } from './soak/invariants.ts';
import { SoakProcesses, type MemorySample } from './soak/processes.ts';
import { oauthCounts, oauthTraffic, userLoop, users } from './soak/traffic.ts';

const p = new SoakProcesses();

/** Runs the soak; answers what did not hold (empty when every invariant held). */
const soak = async (): Promise<string[]> => {
  const t0 = now();
  const tl: Timeline = {
    t0,
    end: t0 + DURATION_MS,
    gateway: [],
    redisDown: [],
    upstreamDown: [],
    configChanges: [],
    replicaDown: [],
    faults: [],
  };
  // Warm up before the RSS baseline.
  for (let i = 0; i < 30; i++)
    await fetch(`${p.allowA.url}/healthcheck/ready`, { headers: { 'USER-ID': `warm-${i}` } }).then(
      (r) => r.text(),
    );
  await authorize({
    issuer: p.stack.authUrls[0] as string,
    clientId: 'demo-client',
    redirectUri: p.stack.redirectUri,
    challenge: pkce().challenge,
  });
  const memStart = await p.sampleMemory();

  const oauth = oauthCounts();
  /** ms since the last Redis restart when an auth server answered 503 (0 while Redis was down). */
  const auth503LagMs: number[] = [];
  const { flowLoop } = oauthTraffic(p, tl, oauth, auth503LagMs);
  let memMid: MemorySample = { rss: {}, heap: {} };
  const midSample = sleep(DURATION_MS / 2).then(async () => {
    memMid = await p.sampleMemory();
  });
  await Promise.all([
    ...users.map((u, index) => userLoop(p, tl, u, index)),
    flowLoop(0),
    flowLoop(1),
    faultLoop(p, tl),
    midSample,
  ]);

  const memEnd = await p.sampleMemory();
  return checkInvariants(p, tl, oauth, auth503LagMs, { start: memStart, mid: memMid, end: memEnd });
};

try {
  await p.setUp();
  const failed = await soak();
  if (failed.length > 0) {
    console.error(
      `soak: ${failed.length} invariant(s) did not hold:\n${failed.slice(0, 30).join('\n')}`,
    );
    process.exitCode = 1;
  } else
    console.log(
      `soak: every invariant held over ${SOAK_SECONDS} s (test-results/soak-report.json)`,
    );
} finally {
  await p.tearDown();
}

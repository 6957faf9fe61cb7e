// What must hold after the soak (scripts/soak.ts header lists it), judged from the timeline and
// the memory samples; and the report written to test-results/soak-report.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  SIDECAR_ENTRY,
  SIDECAR_ENV,
  SIDECAR_MEMORY_LIMIT_MIB,
} from '../../operator/resources/route/deployment.ts';
import { repoRoot } from '../../test/harness/programs.ts';
import { MiB, peakRssBytes } from '../../test/harness/raw-http.ts';
import { overlaps, RULE, SOAK_SECONDS, toMiB, type Interval, type Timeline } from './common.ts';
import type { MemorySample, SoakProcesses } from './processes.ts';
import { users, type OAuthCounts } from './traffic.ts';

/** No request may take longer than the sidecar's slowest timeout (upstream 3 s) plus a margin. */
const MAX_LATENCY_MS = 6_000;
/**
 * Each sidecar must decide again within this long after Redis answers PING. After a plain restart
 * the limit is 2 s (sidecar-redis-fault.test.ts); here Redis replays an append-only file and ioredis, having connected during
 * the replay (-LOADING), waits out Redis' loading ETA before its next ready check.
 */
const RECOVERY_BOUND_MS = 5_000;
/**
 * The live heap (after a forced full GC) may grow this much from the warm start (JIT feedback,
 * pools and caches filling up, a reload's new runtime)...
 */
const HEAP_MARGIN = 24 * MiB;
/** ...but only this much over the second half of the run, once warm: growth there would be a leak. */
const HEAP_SECOND_HALF_MARGIN = 8 * MiB;
/** The sidecar container's memory limit (operator/resources/route/deployment.ts): its RSS must stay under it. */
const SIDECAR_RSS_LIMIT = SIDECAR_MEMORY_LIMIT_MIB * MiB;

/** Every invariant that did not hold (empty when all held); writes the report first. */
export function checkInvariants(
  p: SoakProcesses,
  tl: Timeline,
  oauth: OAuthCounts,
  auth503LagMs: number[],
  memory: { start: MemorySample; mid: MemorySample; end: MemorySample },
): string[] {
  const { allowA, allowB, deny, stack, replicaRestarts } = p;
  const { t0, end, gateway, redisDown, upstreamDown, configChanges, faults } = tl;
  const { start: memStart, mid: memMid, end: memEnd } = memory;
  // VmHWM is kept lazily by the kernel: a sample above it still counts as the peak.
  const rssPeak = Object.fromEntries(
    Object.entries(p.pids()).map(([k, pid]) => [
      k,
      Math.max(peakRssBytes(pid), memStart.rss[k] ?? 0, memMid.rss[k] ?? 0, memEnd.rss[k] ?? 0),
    ]),
  );
  const problems: string[] = [];
  const inAny = (ws: Interval[], s: number, e: number, padBefore = 0, padAfter = 0) =>
    ws.some((w) => overlaps({ start: w.start - padBefore, end: w.end + padAfter }, s, e));

  // No process exited on its own (the restarted upstream instances exited on our SIGTERM).
  for (const program of [allowA.program, allowB.program, deny.program, p.authServer0()]) {
    if (program.exited()) problems.push(`${program.name} exited`);
  }

  // When each sidecar decided again after each Redis restart (its first limiter answer sent
  // after Redis answered PING): until then its onStoreError policy applies, and the lag is bounded.
  const recovered = new Map<Interval, Map<string, number>>();
  let maxRecoveryMs = 0;
  for (const w of redisDown) {
    const bySidecar = new Map<string, number>();
    for (const via of ['sidecar-soak-a', 'sidecar-soak-b', 'sidecar-soak-deny']) {
      const first = gateway
        .filter((r) => r.via === via && r.decided && r.send >= w.end)
        .reduce((m, r) => Math.min(m, r.recv), Infinity);
      bySidecar.set(via, first);
      if (Number.isFinite(first)) maxRecoveryMs = Math.max(maxRecoveryMs, first - w.end);
      else if (w.end < end - 5000)
        problems.push(
          `${via} never decided again after the Redis restart at ${((w.end - t0) / 1000).toFixed(1)} s`,
        );
    }
    recovered.set(w, bySidecar);
  }
  if (maxRecoveryMs > RECOVERY_BOUND_MS)
    problems.push(
      `a sidecar took ${maxRecoveryMs.toFixed(0)} ms to decide again after Redis answered`,
    );

  // No hang, no 500, policies exact.
  let maxLatency = 0;
  const byStatus: Record<string, number> = {};
  for (const r of gateway) {
    const latency = r.recv - r.send;
    maxLatency = Math.max(maxLatency, latency);
    byStatus[String(r.status)] = (byStatus[String(r.status)] ?? 0) + 1;
    const tag = `${r.user} via ${r.via} at ${((r.send - t0) / 1000).toFixed(2)} s`;
    if (r.status === 'timeout' || latency > MAX_LATENCY_MS)
      problems.push(`${tag}: took ${latency.toFixed(0)} ms (${r.status})`);
    if (r.status === 'error') problems.push(`${tag}: connection error`);
    const redisOut = redisDown.some((w) =>
      overlaps({ start: w.start, end: recovered.get(w)?.get(r.via) ?? Infinity }, r.send, r.recv),
    );
    const upstreamOut = inAny(upstreamDown, r.send, r.recv, 0, 2000);
    const surelyDown = redisDown.some(
      (w) => r.send > w.start + 500 && r.recv < (w.restartAt ?? w.end),
    );
    if (typeof r.status === 'number') {
      if (r.status === 500) problems.push(`${tag}: 500`);
      if ((r.status === 502 || r.status === 504) && !upstreamOut)
        problems.push(`${tag}: ${r.status} while the upstream was up`);
      if (r.status === 503 && !(r.route === 'deny' && redisOut))
        problems.push(`${tag}: 503 outside a Redis fault on the ${r.route} route`);
      if (surelyDown && r.route === 'deny' && r.status !== 503)
        problems.push(`${tag}: deny route answered ${r.status} while Redis was down`);
      if (surelyDown && r.route === 'allow' && (r.decided || (r.status !== 200 && !upstreamOut)))
        problems.push(
          `${tag}: allow route answered ${r.status} (decided ${r.decided}) while Redis was down`,
        );
      if (!redisOut && !upstreamOut && !(r.decided && (r.status === 200 || r.status === 429)))
        problems.push(`${tag}: ${r.status} without a limiter decision while Redis was up`);
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
      const admitted = gateway.filter(
        (r) =>
          r.user === u.id &&
          r.decided &&
          r.status === 200 &&
          overlaps({ start: w.start - 200, end: w.end }, r.send, r.recv),
      );
      if (admitted.length === 0) continue;
      windowsChecked++;
      admittedTotal += admitted.length;
      // Elapsed Redis time between the first and last decision is at most this (our clock sees
      // the restart up to ~50 ms late, hence the 200 ms of slack on the start).
      const span =
        Math.max(...admitted.map((r) => r.recv)) -
        Math.min(...admitted.map((r) => Math.max(r.send, w.start - 200)));
      const bound = Math.floor(
        (RULE.burstCapacity + (RULE.replenishRate * span) / 1000) / RULE.requestedTokens,
      );
      if (u.kind === 'heavy') maxFill = Math.max(maxFill, admitted.length / bound);
      if (admitted.length > bound)
        problems.push(
          `${u.id}: ${admitted.length} admitted in a Redis-up window of ${span.toFixed(0)} ms, bound ${bound}`,
        );
    }
  }

  // Config changes reached sidecar A within 3 s, and B never changed.
  for (const [idx, c] of configChanges.entries()) {
    const until = configChanges[idx + 1]?.at ?? Infinity;
    const seen = gateway.filter(
      (r) => r.via === 'sidecar-soak-a' && r.decided && r.send > c.at + 3000 && r.recv < until,
    );
    const wrong = seen.filter((r) => r.spring !== c.spring);
    if (wrong.length > 0)
      problems.push(
        `config change #${idx + 1} (spring ${c.spring}) not applied on ${wrong.length} of ${seen.length} responses after 3 s`,
      );
  }
  if (gateway.some((r) => r.via !== 'sidecar-soak-a' && r.spring))
    problems.push('a sidecar whose config did not change sent Spring headers');

  // OAuth: nothing accepted twice, no unexplained 5xx.
  if (oauth.codeDoubleUse > 0)
    problems.push(`${oauth.codeDoubleUse} authorization code(s) accepted twice`);
  if (oauth.refreshDoubleUse > 0)
    problems.push(
      `${oauth.refreshDoubleUse} refresh token(s) accepted twice (or after their family was revoked)`,
    );
  problems.push(...oauth.server5xx);
  for (const p of stack.programs.concat(replicaRestarts)) {
    for (const line of p.lines)
      if (/"statusCode":500/.test(line))
        problems.push(`${p.name} logged a 500: ${line.slice(0, 200)}`);
  }

  // Memory: the live heap does not grow (a leak would show there first); the sidecars' RSS stays
  // under their container limit at its peak.
  const mib = (b: number | undefined) => `${((b ?? 0) / MiB).toFixed(1)} MiB`;
  for (const [k, start] of Object.entries(memStart.heap)) {
    const end = memEnd.heap[k] as number;
    const mid = memMid.heap[k] as number;
    if (end - start > HEAP_MARGIN)
      problems.push(`${k}: live heap grew from ${mib(start)} to ${mib(end)}`);
    if (end - mid > HEAP_SECOND_HALF_MARGIN)
      problems.push(`${k}: live heap grew from ${mib(mid)} at mid-run to ${mib(end)}`);
    if (k.startsWith('sidecar') && (rssPeak[k] as number) > SIDECAR_RSS_LIMIT)
      problems.push(
        `${k}: peak RSS ${mib(rssPeak[k])} is over the container limit ${mib(SIDECAR_RSS_LIMIT)}`,
      );
  }

  const report = {
    seconds: SOAK_SECONDS,
    at: new Date().toISOString(),
    rule: RULE,
    faults,
    redisDownSeconds: redisDown.map((w) => [
      Number(((w.start - t0) / 1000).toFixed(2)),
      Number(((w.end - t0) / 1000).toFixed(2)),
    ]),
    gateway: {
      requests: gateway.length,
      byStatus,
      maxLatencyMs: Math.round(maxLatency),
      maxRecoveryMsAfterRedisAnswered: Math.round(maxRecoveryMs),
      windowsChecked,
      admittedByTheLimiter: admittedTotal,
      heavyUsersMaxFillOfBound: Number(maxFill.toFixed(3)),
    },
    oauth: {
      ...oauth,
      auth503: auth503LagMs.length,
      auth503MaxMsAfterRedisReturned: Math.round(
        Math.max(0, ...auth503LagMs.filter((x) => Number.isFinite(x))),
      ),
    },
    memoryMiB: Object.fromEntries(
      Object.keys(memStart.rss).map((k) => {
        const at = (m: MemorySample) => ({ rss: toMiB(m.rss[k]), liveHeap: toMiB(m.heap[k]) });
        return [
          k,
          { start: at(memStart), mid: at(memMid), end: at(memEnd), peakRss: toMiB(rssPeak[k]) },
        ];
      }),
    ),
    memoryBoundsMiB: {
      liveHeapFromStart: HEAP_MARGIN / MiB,
      liveHeapSecondHalf: HEAP_SECOND_HALF_MARGIN / MiB,
      sidecarPeakRss: SIDECAR_RSS_LIMIT / MiB,
    },
    sidecarRuns: { entry: SIDECAR_ENTRY, env: SIDECAR_ENV },
    problems: problems.length,
    firstProblems: problems.slice(0, 30),
  };
  mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
  writeFileSync(
    path.join(repoRoot, 'test-results', 'soak-report.json'),
    JSON.stringify(report, null, 2),
  );
  console.log(`soak report: ${JSON.stringify(report, null, 2)}`);

  return [
    ...problems,
    ...(faults.some((f) => f.startsWith('redis')) ? [] : ['Redis was never killed']),
    ...(oauth.exchanges > 0 ? [] : ['no code was exchanged']),
    ...(oauth.codeReplaysRejected > 0 ? [] : ['no code replay was tried and rejected']),
    ...(oauth.refreshReplaysRejected > 0 ? [] : ['no refresh replay was tried and rejected']),
    ...(maxFill > 0.5 ? [] : [`heavy users did not push against their limit (fill ${maxFill})`]), // the load really tested the limit
  ];
}

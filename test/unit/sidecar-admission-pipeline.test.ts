// The admission pipeline every front door runs (sidecar/pipeline.ts): its named steps in order, a
// verdict returned at once when a step refuses or the memory store decides during the run (no
// promise on the proxy's path), the tagged verdicts (admit with the identity the upstream reads,
// limited with Retry-After, problem), and the look-alike spellings of the key header a gateway
// is told to remove in decision mode.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseSidecarConfig, type SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { MemoryBucketStore } from '../../lib/token-bucket/memory-store.ts';
import { Admission } from '../../sidecar/admission.ts';
import { SidecarMetrics } from '../../sidecar/metrics.ts';
import { AwaitedAdmission } from '../../sidecar/awaited-admission.ts';
import { AdmissionRequest, run, steps, type FrontDoor } from '../../sidecar/pipeline.ts';
import { failedVerdict, takenVerdict } from '../../sidecar/take-verdict.ts';
import { PENDING, type AdmissionHead, type Verdict } from '../../sidecar/verdict.ts';
import { keyLookAlikes } from '../../sidecar/request-head.ts';
import { buildRouteRuntime, type RouteRuntime } from '../../sidecar/route-runtime.ts';
import type { Pool } from 'undici';
import type { Decision } from '../../lib/token-bucket/bucket.ts';

const log = pino({ level: 'silent' });

function runtime(limiter: Partial<SidecarConfigInput['limiter']> = {}): RouteRuntime {
  const config = parseSidecarConfig({
    upstream: { url: 'http://127.0.0.1:9' },
    route: { id: 'r' },
    limiter: { replenishRate: 1, burstCapacity: 2, ...limiter },
  });
  const store = new MemoryBucketStore({ now: () => 1_000_000, sweepIntervalMs: 0 });
  return buildRouteRuntime(
    config,
    store,
    undefined as unknown as Pool,
    new SidecarMetrics().forRoute('r', 'memory'),
  );
}

/** A front door that records what it was settled with. */
class Recorded implements FrontDoor {
  readonly settled: Verdict[] = [];
  readonly request: AdmissionRequest;
  constructor(admission: Admission, rt: RouteRuntime) {
    this.request = new AdmissionRequest(admission, rt, undefined, this);
  }
  run(method: string, target: string, h: AdmissionHead): Verdict {
    return run(this.request, method, target, h);
  }
  taken(decision: Decision): void {
    this.settled.push(takenVerdict(this.request, decision));
  }
  failed(err: Error): void {
    this.settled.push(failedVerdict(this.request, err));
  }
  settle(verdict: Verdict): void {
    this.settled.push(verdict);
  }
  fault(err: unknown): void {
    throw err;
  }
}

const head = (key: string | undefined, more: Partial<AdmissionHead> = {}): AdmissionHead => ({
  key,
  authorization: undefined,
  hostCount: 1,
  hops: 0,
  ...more,
});

describe('admission pipeline', () => {
  it('runs its named steps in order', () => {
    expect(steps.map((s) => s.name)).toEqual([
      'target',
      'hops',
      'host',
      'rule',
      'key',
      'shed',
      'hold',
      'take',
    ]);
  });

  it('a refusal before the take is returned at once, nothing settled later', () => {
    const rt = runtime();
    for (const [target, h, status] of [
      ['http://x/a', head('u'), 400],
      ['/a', head(undefined), 400],
      ['/a', head('u', { hostCount: 2 }), 400],
      ['/a', head('u', { hops: 8 }), 508],
    ] as const) {
      const r = new Recorded(new Admission(log), rt);
      const verdict = r.run('GET', target, h);
      expect(verdict).toMatchObject({ kind: 'problem', problem: { status } });
      expect(r.settled).toEqual([]);
    }
  });

  it('the memory store decides during the run: settled before run() returns, with the canonical target kept', () => {
    const rt = runtime();
    const r = new Recorded(new Admission(log), rt);
    expect(r.run('GET', '/a/./b/../c?q=1', head('alice'))).toBe(PENDING);
    expect(r.settled).toHaveLength(1);
    expect(r.settled[0]).toMatchObject({ kind: 'admit', outcome: 'forwarded', identity: 'alice' });
    expect(r.request.target).toBe('/a/c?q=1');
  });

  it('past the burst: limited with Retry-After in whole seconds and the problem the client gets', async () => {
    const rt = runtime();
    const admission = new Admission(log);
    const verdicts: Verdict[] = [];
    for (let i = 0; i < 3; i++)
      verdicts.push(
        await new AwaitedAdmission(admission, rt, undefined).admit('GET', '/a', head('bob')),
      );
    expect(verdicts.map((v) => v.kind)).toEqual(['admit', 'admit', 'limited']);
    expect(verdicts[2]).toMatchObject({ kind: 'limited', retryAfter: 1, problem: { status: 429 } });
    expect(verdicts[2]?.kind === 'limited' && verdicts[2].headers).toContain('retry-after');
  });

  it('no rule and unmatched forward: admitted untaken, the identity sent passed on', () => {
    const rt = runtime({
      rules: [
        { name: 'orders', path: '/orders/**', limits: [{ replenishRate: 1, burstCapacity: 1 }] },
      ],
      replenishRate: undefined,
      burstCapacity: undefined,
      unmatched: 'forward',
    });
    const r = new Recorded(new Admission(log), rt);
    expect(r.run('GET', '/other', head('carol'))).toMatchObject({
      kind: 'admit',
      headers: [],
      identity: 'carol',
    });
  });
});

describe('key header look-alikes', () => {
  it('every other spelling with - and _ swapped, never the name itself', () => {
    expect(keyLookAlikes('user-id')).toEqual(['user_id']);
    expect(new Set(keyLookAlikes('x-user-id'))).toEqual(
      new Set(['x_user-id', 'x-user_id', 'x_user_id']),
    );
    expect(keyLookAlikes('userid')).toEqual([]);
  });

  it('stays bounded for a name with many separators', () => {
    const names = keyLookAlikes('a-b-c-d-e-f-g-h-i-j-k-l');
    expect(names.length).toBeLessThanOrEqual(2 ** 8);
    expect(names).toContain('a_b_c_d_e_f_g_h_i_j_k_l');
  });
});

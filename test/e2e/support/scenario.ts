// The specification's end-to-end scenario from the client pod (in-cluster/scenario.mjs): 30 GETs
// 0.5 s apart for one user at 1/10/2, checked against the exact bucket at the times the client
// sent. What every front door shares is checked here; each test checks its own headers on the
// admitted and limited answers it returns.
import { expect } from 'vitest';
import { take, type BucketRule, type BucketState } from '../../../lib/token-bucket/bucket.ts';
import type { Kube } from '../../harness/kind/kube.ts';
import { inCluster } from './workloads.ts';

export const SPEC_RULE: BucketRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 };

export interface ScenarioAnswer {
  readonly i: number;
  readonly sentAtMs: number;
  readonly status: number;
  readonly body: string;
  readonly headers: Record<string, string | null>;
}

/** Runs the scenario against `url`; 12 admitted with the service's body, 18 refused with Retry-After and problem+json. */
export async function specScenario(
  kube: Kube,
  namespace: string,
  url: string,
): Promise<{ ok: ScenarioAnswer[]; limited: ScenarioAnswer[] }> {
  const { results } = await inCluster<{ results: ScenarioAnswer[] }>(kube, namespace, 'scenario', {
    url,
    userId: 'spec-user',
    count: 30,
    periodMs: 500,
  });
  expect(results).toHaveLength(30);
  const ok = results.filter((r) => r.status === 200);
  const limited = results.filter((r) => r.status === 429);
  expect(
    ok.length + limited.length,
    JSON.stringify(results.filter((r) => r.status !== 200 && r.status !== 429)),
  ).toBe(30);

  // The exact model at the times the client sent. On this schedule most admissions fall on the
  // instant the bucket reaches 2 tokens, so a few ms of network jitter may move one of them;
  // the total stays 12 unless the last one is pushed past the end.
  let state: BucketState | undefined;
  let model = 0;
  for (const r of results) {
    const step = take(state, SPEC_RULE, r.sentAtMs);
    state = step.state;
    if (step.decision.allowed) model++;
  }
  expect(model).toBe(12);
  expect(ok.length).toBe(12);
  for (const r of ok) expect(r.body).toBe('OK');
  for (const r of limited) {
    expect(Number(r.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
  }
  // The first six go through (10 tokens, then 0.5 s refills), the 7th and 8th are limited.
  expect(results.slice(0, 6).every((r) => r.status === 200)).toBe(true);
  expect(results.slice(6, 8).every((r) => r.status === 429)).toBe(true);
  return { ok, limited };
}

// Helpers of the decision-service tests: the specification scenario (limits 1/10/2, 30 requests
// 0.5 s apart) sent through any front door, and a decision service started from the sidecar
// program in mode decision.
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { builtTool } from '../harness/gateways/gateways.ts';
import { freePort } from '../harness/ports.ts';
import type { RunningSidecar, SidecarConfig } from '../harness/programs.ts';
import type { Starter } from '../harness/fixtures.ts';
import { sleep } from './sidecar-support.ts';

export const specRule = { replenishRate: 1, burstCapacity: 10, requestedTokens: 2 } as const;

/** One answer as the client (or Envoy) sees it. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | undefined>;
  readonly body: string;
}

export interface RunningDecision extends RunningSidecar {
  readonly grpcPort: number;
}

/** A decision service (the sidecar program, mode decision) with its gRPC listener on a free port; loopback trusted for forward-auth. */
export async function startDecision(
  start: Starter,
  config: Omit<SidecarConfig, 'mode' | 'decision'>,
  name = 'decision',
): Promise<RunningDecision> {
  const grpcPort = await freePort();
  const sidecar = await start.sidecar(
    {
      ...config,
      mode: 'decision',
      decision: { grpc: { host: '127.0.0.1', port: grpcPort }, trustedProxies: ['127.0.0.1'] },
    },
    { name },
  );
  return { ...sidecar, grpcPort };
}

/**
 * The specification scenario through `send`: 30 requests aimed 0.5 s apart (each after the first
 * 50 ms later, clear of the exact-2.0-token edge, as sidecar-spec-scenario.test.ts explains).
 * Every admitted answer is 200, every other 429 with Retry-After, the RateLimit headers and a
 * problem+json body; 12 admitted when the schedule held (a busy machine still checks the shapes).
 * `headersWhenAdmitted: false`: the gateway gives the admitted answers' RateLimit headers to the
 * service only, so they are not looked for on those.
 */
export async function specScenario(
  send: (i: number) => Promise<Answer>,
  options: { readonly headersWhenAdmitted?: boolean } = {},
): Promise<Answer[]> {
  const answers: Answer[] = [];
  const sendMs: number[] = [];
  const t0 = performance.now();
  for (let i = 0; i < 30; i++) {
    const wait = t0 + i * 500 + (i === 0 ? 0 : 50) - performance.now();
    if (wait > 0) await sleep(wait);
    sendMs.push(performance.now());
    answers.push(await send(i));
  }
  for (const a of answers) {
    expect([200, 429]).toContain(a.status);
    if (a.status === 200 && options.headersWhenAdmitted === false) continue;
    expect(a.headers['ratelimit']).toMatch(/^"default";r=\d+;t=\d+$/);
    expect(a.headers['ratelimit-policy']).toBe('"default";q=10;w=10');
    if (a.status === 429) {
      expect(Number(a.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(a.headers['content-type']).toBe('application/problem+json');
      expect(JSON.parse(a.body)).toMatchObject({
        status: 429,
        title: 'Too Many Requests',
        type: 'urn:portcullis:problem:rate-limited',
      });
    }
  }
  const slipMs = Math.max(
    ...sendMs.slice(1).map((t, i) => Math.abs(t - sendMs[0]! - (i + 1) * 500 - 50)),
  );
  const admitted = answers.filter((a) => a.status === 200).length;
  if (slipMs < 45) {
    expect(admitted).toBe(12);
    expect(answers.length - admitted).toBe(18);
  } else {
    // Said, not hidden: the exact count was not checked on this run.
    console.warn(
      `specification scenario: the schedule slipped ${Math.round(slipMs)} ms; ${admitted} admitted, the count of 12 not checked`,
    );
  }
  return answers;
}

const run = promisify(execFile);

/** One CheckResponse as ext-authz-client prints it. */
export interface CheckResult {
  readonly code: number;
  readonly allowed: boolean;
  readonly httpStatus?: number;
  readonly headers: Record<string, string>;
  readonly responseHeaders?: Record<string, string>;
  /** ok_response.headers_to_remove. */
  readonly headersToRemove?: string[];
  readonly body?: string;
  readonly error?: string;
}

/** Check calls through ext-authz-client (Envoy's published API); `args` as its flags. */
export async function checkGrpc(decision: RunningDecision, args: string[]): Promise<CheckResult[]> {
  const client = builtTool('build-ext-authz-client.sh', 'EXT_AUTHZ_CLIENT');
  const { stdout } = await run(client, ['-addr', `127.0.0.1:${decision.grpcPort}`, ...args]);
  return stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CheckResult);
}

// Sign-in benchmark: full code-to-token flows per second (GET /auth, sign-in with the
// consent already stored, 303 with the code, POST /token) and GET /me requests per second with
// access-token verification (ES256 JWT against the JWKS).
// To run it from `make bench`, register { auth: { run: runAuthBench, markdown: authMarkdown } } in
// bench/run.ts. Bounded: BENCH_DURATION_S (default 10 s) per measurement after a short warm-up, loopback only.
// The flow load comes from Node in this process (it competes for the same 2 cores); /me load from
// wrk. The fixture users' scrypt cost is ln=14 (production hashes use ln=17, ~8x the work).
import os from 'node:os';
import { authorize, tokenRequest } from '../test/integration/auth-flow.ts';
import { SECRETS, startStack } from '../test/integration/auth-stack.ts';
import { ensureWrk, runWrk } from './gateway-wrk.ts';

export interface AuthBenchResult {
  readonly suite: 'auth';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavgAtStart: number[] };
  readonly flow: {
    readonly concurrency: number;
    readonly durationS: number;
    readonly flows: number;
    readonly failures: number;
    readonly flowsPerSecond: number;
    readonly flowMs: { p50: number; p99: number };
    /** The POST /token step alone (code exchange, token signing, refresh family creation). */
    readonly tokenMs: { p50: number; p99: number };
    readonly scryptCost: string;
  };
  readonly me: { name: string; requestsPerSecond: number; p50Ms: number; p99Ms: number; non2xx: number }[];
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0);
};
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

export async function runAuthBench(log: (line: string) => void): Promise<AuthBenchResult> {
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 10);
  const concurrency = 4;
  ensureWrk();
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();
  const stack = await startStack({ userService: true });
  try {
    const one = async () => {
      const t0 = performance.now();
      const { location } = await authorize({ issuer: stack.issuer, clientId: 'demo-client', redirectUri: stack.redirectUri });
      const t1 = performance.now();
      const res = await tokenRequest(stack.issuer, { grant_type: 'authorization_code', code: location.searchParams.get('code') ?? '', redirect_uri: stack.redirectUri, client_id: 'demo-client', client_secret: SECRETS.post });
      const t2 = performance.now();
      return { ok: res.status === 200, flowMs: t2 - t0, tokenMs: t2 - t1, token: String(res.json['access_token']) };
    };
    const first = await one(); // stores the consent
    for (let i = 0; i < 10; i++) await one(); // warm-up

    log(`flow: ${concurrency} concurrent clients for ${durationS} s`);
    const flowMs: number[] = [];
    const tokenMs: number[] = [];
    let failures = 0;
    const deadline = performance.now() + durationS * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline) {
          const r = await one().catch(() => ({ ok: false, flowMs: 0, tokenMs: 0 }));
          if (!r.ok) failures++;
          else {
            flowMs.push(r.flowMs);
            tokenMs.push(r.tokenMs);
          }
        }
      }),
    );
    const elapsedS = (performance.now() - started) / 1000;

    // /me directly: through the sidecar one USER-ID is limited (20/s locally), so wrk would
    // measure the limiter, not token verification (the gateway suite measures the sidecar).
    const me: AuthBenchResult['me'] = [];
    const headers = { authorization: `Bearer ${first.token}` };
    const name = 'GET /me (user service verifies the ES256 JWT)';
    log(`wrk: ${name}`);
    await runWrk({ url: `${stack.userServiceUrl}/me`, connections: 32, threads: 2, durationS: 2, headers });
    const r = await runWrk({ url: `${stack.userServiceUrl}/me`, connections: 32, threads: 2, durationS, headers });
    me.push({ name, requestsPerSecond: round(r.requests / (r.durationUs / 1e6), 0), p50Ms: round(r.latencyUs.p50 / 1000, 2), p99Ms: round(r.latencyUs.p99 / 1000, 2), non2xx: r.errors.status });
    return {
      suite: 'auth',
      startedAt,
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadavgAtStart },
      flow: {
        concurrency,
        durationS: round(elapsedS, 2),
        flows: flowMs.length,
        failures,
        flowsPerSecond: round(flowMs.length / elapsedS),
        flowMs: { p50: round(quantile(flowMs, 0.5)), p99: round(quantile(flowMs, 0.99)) },
        tokenMs: { p50: round(quantile(tokenMs, 0.5), 2), p99: round(quantile(tokenMs, 0.99), 2) },
        scryptCost: 'ln=14,r=8,p=1 (fixture users)',
      },
      me,
    };
  } finally {
    await stack.stop();
  }
}

export function authMarkdown(r: AuthBenchResult): string {
  const lines = [
    `### Sign-in (${r.startedAt}, ${r.machine.cpus} x ${r.machine.model}, node ${r.machine.node})`,
    '',
    '| measurement | per second | p50 | p99 |',
    '|---|---|---|---|',
    `| full code-to-token flow (GET /auth, sign-in, code, POST /token), ${r.flow.concurrency} clients, scrypt ${r.flow.scryptCost} | ${r.flow.flowsPerSecond} | ${r.flow.flowMs.p50} ms | ${r.flow.flowMs.p99} ms |`,
    `| POST /token step of those flows | | ${r.flow.tokenMs.p50} ms | ${r.flow.tokenMs.p99} ms |`,
    ...r.me.map((m) => `| ${m.name}, wrk 32 connections | ${m.requestsPerSecond} | ${m.p50Ms} ms | ${m.p99Ms} ms |`),
  ];
  return lines.join('\n');
}

// Token endpoint latency while a sign-in flood runs. Password hashing (scrypt at the production
// cost, ln=17) runs on libuv's thread pool; without a bound, a burst of sign-ins fills the pool and
// everything else that needs it waits. Three runs of the real auth server (memory store):
// - quiet: no flood, the anchor;
// - unbounded: a flood of FLOOD_WORKERS parallel sign-ins with the password gate opened wide
//   (64 at once, 10,000 waiting), which is how the server behaved before the gate;
// - bounded: the same flood at the gate's defaults (one less than the cores at once, at most the
//   pool size minus 2; 16 waiting; the rest 503).
// In each, one client refreshes a token in a loop (one request at a time) for BENCH_SECONDS and the
// refresh latencies give p50/p99; sign-ins completed per second and 503s are counted.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hashPassword } from '../lib/config/auth-server.ts';
import { defaultHashConcurrency } from '../services/auth-server/password-gate.ts';
import { authorize, tokenRequest, trySignIn } from '../test/integration/auth-flow.ts';
import { SECRETS, startStack, type Stack } from '../test/integration/auth-stack.ts';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 15);
const FLOOD_WORKERS = 30;

interface RunResult {
  readonly name: string;
  readonly gate: string;
  readonly refreshes: number;
  readonly refreshMs: { p50: number; p99: number; max: number };
  readonly signInsPerSecond: number;
  readonly refused503: number;
}

export interface SignInFloodBenchResult {
  readonly suite: 'signin-flood';
  readonly startedAt: string;
  readonly machine: { cpus: number; model: string; node: string; loadavgAtStart: number[]; loadavgAtEnd: number[] };
  readonly load: { seconds: number; floodWorkers: number; scrypt: string };
  readonly runs: RunResult[];
  /** p99 of a refresh under the flood, bounded over unbounded. */
  readonly p99Ratio: number;
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
const round = (n: number) => Math.round(n * 100) / 100;

async function measure(stack: Stack, flood: boolean, log: (line: string) => void): Promise<Omit<RunResult, 'name' | 'gate'>> {
  const { location } = await authorize({ issuer: stack.issuer, clientId: 'demo-client', redirectUri: stack.redirectUri });
  const first = await tokenRequest(stack.issuer, { grant_type: 'authorization_code', code: location.searchParams.get('code') ?? '', redirect_uri: stack.redirectUri, client_id: 'demo-client', client_secret: SECRETS.post });
  let refreshToken = String(first.json['refresh_token']);
  const until = Date.now() + SECONDS * 1000;
  let signIns = 0;
  let refused = 0;
  const workers = flood
    ? Array.from({ length: FLOOD_WORKERS }, async () => {
        while (Date.now() < until) {
          const res = await trySignIn(stack.issuer, stack.redirectUri, 'alice', 'wrong');
          await res.arrayBuffer();
          if (res.status === 503) refused++;
          else signIns++;
        }
      })
    : [];
  const latencies: number[] = [];
  while (Date.now() < until) {
    const started = performance.now();
    const res = await tokenRequest(stack.issuer, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: 'demo-client', client_secret: SECRETS.post });
    latencies.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`refresh answered ${res.status}`);
    refreshToken = String(res.json['refresh_token']);
  }
  await Promise.all(workers);
  latencies.sort((a, b) => a - b);
  log(`  ${latencies.length} refreshes, p99 ${quantile(latencies, 0.99).toFixed(1)} ms; ${signIns} sign-ins checked, ${refused} refused`);
  return {
    refreshes: latencies.length,
    refreshMs: { p50: round(quantile(latencies, 0.5)), p99: round(quantile(latencies, 0.99)), max: round(latencies.at(-1) ?? 0) },
    signInsPerSecond: round(signIns / SECONDS),
    refused503: refused,
  };
}

export async function runSignInFloodBench(log: (line: string) => void): Promise<SignInFloodBenchResult> {
  const loadavgAtStart = os.loadavg();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-signin-flood-'));
  const usersFile = path.join(dir, 'users.json');
  // The production scrypt cost, so one hash costs what it costs in a real deployment.
  writeFileSync(usersFile, JSON.stringify({ users: [{ username: 'alice', password_hash: await hashPassword('wonderland'), profile: { name: 'Alice' } }] }));
  const generous = { AUTH_SIGNIN_USER_ADDRESS_BURST: '1000000', AUTH_SIGNIN_USER_ADDRESS_PER_MINUTE: '1000000', AUTH_SIGNIN_USER_BURST: '1000000', AUTH_SIGNIN_USER_PER_MINUTE: '1000000', AUTH_SIGNIN_ADDRESS_BURST: '1000000', AUTH_SIGNIN_ADDRESS_PER_MINUTE: '1000000' };
  const configs: { name: string; gate: string; flood: boolean; env: Record<string, string> }[] = [
    { name: 'quiet (no flood)', gate: `defaults (${defaultHashConcurrency()} at once, 16 waiting)`, flood: false, env: {} },
    { name: `flood, unbounded hashing`, gate: '64 at once, 10,000 waiting', flood: true, env: { AUTH_PASSWORD_HASH_CONCURRENCY: '64', AUTH_PASSWORD_HASH_QUEUE: '10000' } },
    { name: `flood, bounded hashing`, gate: `defaults (${defaultHashConcurrency()} at once, 16 waiting)`, flood: true, env: {} },
  ];
  const runs: RunResult[] = [];
  try {
    for (const c of configs) {
      log(`-- ${c.name}`);
      const stack = await startStack({ authEnv: { AUTH_USERS_FILE: usersFile, LOG_LEVEL: 'error', ...generous, ...c.env } });
      try {
        runs.push({ name: c.name, gate: c.gate, ...(await measure(stack, c.flood, log)) });
      } finally {
        await stack.stop();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const unbounded = runs[1]?.refreshMs.p99 ?? 0;
  const bounded = runs[2]?.refreshMs.p99 ?? 0;
  return {
    suite: 'signin-flood',
    startedAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? '?', node: process.version, loadavgAtStart, loadavgAtEnd: os.loadavg() },
    load: { seconds: SECONDS, floodWorkers: FLOOD_WORKERS, scrypt: 'ln=17, r=8, p=1' },
    runs,
    p99Ratio: unbounded > 0 ? round(bounded / unbounded) : 0,
  };
}

export function signInFloodMarkdown(r: SignInFloodBenchResult): string {
  return [
    `### Token refresh latency under a sign-in flood`,
    '',
    `${r.load.floodWorkers} parallel sign-ins (scrypt ${r.load.scrypt}) for ${r.load.seconds} s against one auth server (memory store), while one client refreshes a token in a loop. ${r.machine.cpus} CPUs (${r.machine.model}), Node ${r.machine.node}.`,
    '',
    '| run | password gate | refreshes | refresh p50 ms | refresh p99 ms | max ms | sign-ins checked/s | 503 |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...r.runs.map((x) => `| ${x.name} | ${x.gate} | ${x.refreshes} | ${x.refreshMs.p50} | ${x.refreshMs.p99} | ${x.refreshMs.max} | ${x.signInsPerSecond} | ${x.refused503} |`),
    '',
    `Refresh p99 under the flood, bounded over unbounded: ${r.p99Ratio}x.`,
  ].join('\n');
}

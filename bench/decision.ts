// The decision service's cost beside the proxy's (bench/README.md): answers per second at
// saturation and CPU per answer at a fixed rate, HTTP check (ext_authz/forward-auth) and gRPC
// Authorization/Check (a client generated from Envoy's published API), against a request through
// the sidecar proxy. All as deployed, on one Redis, a limit nobody reaches, 1000 users in turn.
//   BENCH_DECISION_RATE (1000/s), BENCH_DURATION_S (4), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32)
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { builtTool } from '../test/harness/gateways/gateways.ts';
import { freePort } from '../test/harness/ports.ts';
import { startUserService } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { startBenchSidecar } from './lib/fronts.ts';
import { ensureLoadgen, runRate } from './lib/load.ts';
import { cpuUs, loadavg, median, r2 } from './lib/measure.ts';
import { interleave } from './lib/suite.ts';

const run = promisify(execFile);

const NAMES = {
  proxy: 'proxied request (sidecar → user service)',
  'decision-http': 'decision, HTTP (ext_authz / forward-auth check)',
  'decision-grpc': 'decision, gRPC (Authorization/Check)',
};
type Form = keyof typeof NAMES;
type Summary = Record<'perSecond' | 'cpuUsPerAnswer' | 'perSecondVsProxy' | 'cpuVsProxy', number>;
const FORMS = Object.keys(NAMES) as Form[];

export async function runDecisionBench(log: (line: string) => void = console.log) {
  ensureLoadgen();
  const client = builtTool('build-ext-authz-client.sh', 'EXT_AUTHZ_CLIENT');
  const rate = Number(process.env['BENCH_DECISION_RATE'] ?? 1000);
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 4);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();

  const redis = await startRedis();
  const user = await startUserService();
  const proxy = await startBenchSidecar(user.url, redis.url, 'bench-proxy');
  const grpcPort = await freePort();
  const decision = await startBenchSidecar(user.url, redis.url, 'bench-decision', {
    mode: 'decision',
    decision: { grpc: { host: '127.0.0.1', port: grpcPort } },
  });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-decision-'));
  const rotateHeaderFile = path.join(dir, 'users.txt');
  const users = Array.from({ length: 1000 }, (_, i) => `USER-ID: user-${i}`);
  writeFileSync(rotateHeaderFile, users.join('\n'));

  const pidOf = (form: Form) =>
    form === 'proxy' ? proxy.program.child.pid : decision.program.child.pid;
  /** One run of `form` at `offered` per second (0: as fast as answered). */
  const load = async (form: Form, offered: number) => {
    if (form === 'decision-grpc') {
      const args = `-addr 127.0.0.1:${grpcPort} -path /orders -load ${durationS}s -concurrency ${connections} -rate ${offered} -rotate-key user-id`;
      const { stdout } = await run(client, args.split(' '));
      const { ok, denied, errors, achievedRate } = JSON.parse(stdout) as Record<
        'ok' | 'denied' | 'errors' | 'achievedRate',
        number
      >;
      return { answered: ok + denied, failures: denied + errors, perSecond: achievedRate };
    }
    const url = form === 'proxy' ? `${proxy.url}/healthcheck/ready` : `${decision.url}/orders`;
    // Saturation for the open-loop generator: an offered rate no form reaches.
    const r = await runRate({
      url,
      rate: offered === 0 ? 100_000 : offered,
      durationS,
      connections,
      rotateHeaderFile,
    });
    const failures = r.completed - (r.statuses['200'] ?? 0) + r.errors;
    return { answered: r.completed, failures, perSecond: r.achievedRate };
  };

  let measured: { cpu: number; perSecond: number; failures: number }[][] = [];
  try {
    for (const form of FORMS) await load(form, rate); // warm-up: JIT, connections
    // Each round in another order, so no form always runs after the same one.
    measured = await interleave(FORMS, rounds, async (form, round) => {
      const before = cpuUs(pidOf(form));
      const fixed = await load(form, rate);
      const cpu = Math.round((cpuUs(pidOf(form)) - before) / Math.max(1, fixed.answered));
      const saturated = await load(form, 0);
      const perSecond = Math.round(saturated.perSecond);
      log(
        `round ${round} ${form}: ${perSecond}/s at saturation, ${cpu} µs CPU per answer at ${rate}/s`,
      );
      return { cpu, perSecond, failures: fixed.failures + saturated.failures };
    });
  } finally {
    await Promise.allSettled([
      decision.program.stop(),
      proxy.program.stop(),
      user.program.stop(),
      redis.stop(),
    ]);
  }
  const forms = FORMS.map((form, i) => ({
    form,
    perSecond: (measured[i] ?? []).map((x) => x.perSecond),
    cpuUsPerAnswer: (measured[i] ?? []).map((x) => x.cpu),
    failures: (measured[i] ?? []).reduce((n, x) => n + x.failures, 0),
  }));
  const medians = forms.map((f) => [median(f.perSecond), median(f.cpuUsPerAnswer)] as const);
  const [proxyPerSecond = 0, proxyCpu = 0] = medians[0] ?? [];
  /** Medians, and each decision form's over the proxy's. */
  const summary = {} as Record<Form, Summary>;
  for (const [i, [perSecond, cpuUsPerAnswer]] of medians.entries())
    summary[FORMS[i] as Form] = {
      perSecond,
      cpuUsPerAnswer,
      perSecondVsProxy: r2(perSecond / proxyPerSecond),
      cpuVsProxy: r2(cpuUsPerAnswer / proxyCpu),
    };
  return {
    suite: 'decision' as const,
    startedAt,
    loadavgAtStart,
    cpus: os.cpus().length,
    rate,
    durationS,
    rounds,
    connections,
    forms,
    summary,
  };
}

type DecisionBenchResult = Awaited<ReturnType<typeof runDecisionBench>>;

export function decisionMarkdown(r: DecisionBenchResult): string {
  const rows = FORMS.map((f) => {
    const s = r.summary[f];
    const failures = r.forms.find((x) => x.form === f)?.failures ?? 0;
    return `| ${NAMES[f]} | ${s.perSecond} | ${s.perSecondVsProxy}x | ${s.cpuUsPerAnswer} | ${s.cpuVsProxy}x | ${failures} |`;
  });
  return [
    '# Decision service vs the proxy',
    '',
    `${r.startedAt}, ${r.cpus} CPUs, load average at start ${loadavg(r.loadavgAtStart)}; ` +
      `${r.rounds} interleaved rounds of ${r.durationS} s per measurement, ${r.connections} connections or callers, one Redis, 1000 users in turn, a limit nobody reaches. ` +
      'Medians over the rounds. CPU is the serving process only (the proxied request also costs the user service).',
    '',
    `| form | answers/s at saturation | vs proxy | CPU µs per answer at ${r.rate}/s | vs proxy | non-OK answers |`,
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

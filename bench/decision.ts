// The decision service's cost beside the proxy's: decisions per second at saturation and CPU per
// decision at a fixed rate, for the HTTP form (ext_authz/forward-auth check) and the gRPC form
// (Envoy's Authorization/Check, from a client generated from Envoy's published API), against a
// request through the sidecar proxy to the user service. All three run as deployed (the bundle,
// the container's environment) on one Redis, with a limit nobody reaches and 1000 users in turn,
// interleaved round by round; CPU is the serving process' own (user + system, /proc).
//   BENCH_DECISION_RATE (1000/s), BENCH_DURATION_S (4), BENCH_ROUNDS (3), BENCH_CONNECTIONS (32)
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SIDECAR_ENTRY, SIDECAR_ENV } from '../operator/resources/route/deployment.ts';
import { builtTool } from '../test/harness/gateways/gateways.ts';
import { freePort } from '../test/harness/ports.ts';
import { startProgram, startSidecar } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { startBenchSidecar, unreachable } from './lib/fronts.ts';
import { ensureLoadgen, runRate } from './lib/loadgen.ts';
import { cpuUs, median } from './lib/measure.ts';

const run = promisify(execFile);

type Form = 'proxy' | 'decision-http' | 'decision-grpc';
const FORMS: readonly Form[] = ['proxy', 'decision-http', 'decision-grpc'];

interface FormResult {
  readonly form: Form;
  /** Answers per second at saturation, one per round. */
  readonly perSecond: number[];
  /** CPU of the serving process per answer at the fixed rate, µs, one per round. */
  readonly cpuUsPerAnswer: number[];
  /** Answers that were not 200/OK over every run (must be 0). */
  readonly failures: number;
}

export interface DecisionBenchResult {
  readonly suite: 'decision';
  readonly startedAt: string;
  readonly loadavgAtStart: number[];
  readonly cpus: number;
  readonly rate: number;
  readonly durationS: number;
  readonly rounds: number;
  readonly connections: number;
  readonly forms: FormResult[];
  /** Medians, and each decision form's over the proxy's. */
  readonly summary: Record<
    Form,
    { perSecond: number; cpuUsPerAnswer: number; perSecondVsProxy: number; cpuVsProxy: number }
  >;
}

interface Load {
  readonly answered: number;
  readonly failures: number;
  readonly perSecond: number;
}

export async function runDecisionBench(
  log: (line: string) => void = console.log,
): Promise<DecisionBenchResult> {
  ensureLoadgen();
  const client = builtTool('build-ext-authz-client.sh', 'EXT_AUTHZ_CLIENT');
  const rate = Number(process.env['BENCH_DECISION_RATE'] ?? 1000);
  const durationS = Number(process.env['BENCH_DURATION_S'] ?? 4);
  const rounds = Number(process.env['BENCH_ROUNDS'] ?? 3);
  const connections = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
  const startedAt = new Date().toISOString();
  const loadavgAtStart = os.loadavg();

  const redis = await startRedis();
  const userPort = await freePort();
  const user = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(userPort), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    waitPort: userPort,
    name: 'bench-user-service',
  });
  const proxy = await startBenchSidecar(`http://127.0.0.1:${userPort}`, redis.url, 'bench-proxy');
  const grpcPort = await freePort();
  const decision = await startSidecar(
    {
      mode: 'decision',
      decision: { grpc: { host: '127.0.0.1', port: grpcPort } },
      route: { id: 'bench', path: '/**' },
      limiter: unreachable,
      redis: { url: redis.url, commandTimeoutMs: 1000 },
      logLevel: 'warn',
    },
    { name: 'bench-decision', entry: SIDECAR_ENTRY, env: { ...SIDECAR_ENV } },
  );
  const users = path.join(
    mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-decision-')),
    'users.txt',
  );
  writeFileSync(users, Array.from({ length: 1000 }, (_, i) => `USER-ID: user-${i}`).join('\n'));

  const pidOf = (form: Form) =>
    form === 'proxy' ? proxy.program.child.pid : decision.program.child.pid;
  /** One run of `form` at `offered` per second (0: as fast as answered). */
  const load = async (form: Form, offered: number): Promise<Load> => {
    if (form === 'decision-grpc') {
      const args = [
        '-addr',
        `127.0.0.1:${grpcPort}`,
        '-path',
        '/orders',
        '-load',
        `${durationS}s`,
        '-concurrency',
        String(connections),
        '-rate',
        String(offered),
        '-rotate-key',
        'user-id',
      ];
      const { stdout } = await run(client, args);
      const r = JSON.parse(stdout) as {
        ok: number;
        denied: number;
        errors: number;
        achievedRate: number;
      };
      return {
        answered: r.ok + r.denied,
        failures: r.denied + r.errors,
        perSecond: r.achievedRate,
      };
    }
    const url = form === 'proxy' ? `${proxy.url}/healthcheck/ready` : `${decision.url}/orders`;
    // Saturation for the open-loop generator: an offered rate no form reaches.
    const r = await runRate({
      url,
      rate: offered === 0 ? 100_000 : offered,
      durationS,
      connections,
      rotateHeaderFile: users,
    });
    const ok = r.statuses['200'] ?? 0;
    return {
      answered: r.completed,
      failures: r.completed - ok + r.errors,
      perSecond: r.achievedRate,
    };
  };

  const results = new Map<Form, FormResult>(
    FORMS.map((f) => [f, { form: f, perSecond: [], cpuUsPerAnswer: [], failures: 0 }]),
  );
  try {
    for (const form of FORMS) await load(form, rate); // warm-up: JIT, connections
    for (let round = 0; round < rounds; round++) {
      // Each round in another order, so no form always runs after the same one.
      for (const form of FORMS.map((_, i) => FORMS[(i + round) % FORMS.length] as Form)) {
        const r = results.get(form) as FormResult & { failures: number };
        const before = cpuUs(pidOf(form));
        const fixed = await load(form, rate);
        const cpu = (cpuUs(pidOf(form)) - before) / Math.max(1, fixed.answered);
        const saturated = await load(form, 0);
        r.cpuUsPerAnswer.push(Math.round(cpu));
        r.perSecond.push(Math.round(saturated.perSecond));
        results.set(form, { ...r, failures: r.failures + fixed.failures + saturated.failures });
        log(
          `round ${round + 1} ${form}: ${Math.round(saturated.perSecond)}/s at saturation, ${Math.round(cpu)} µs CPU per answer at ${rate}/s`,
        );
      }
    }
  } finally {
    await Promise.allSettled([
      decision.program.stop(),
      proxy.program.stop(),
      user.stop(),
      redis.stop(),
    ]);
  }
  const forms = FORMS.map((f) => results.get(f) as FormResult);
  const base = {
    perSecond: median([...forms[0]!.perSecond]),
    cpu: median([...forms[0]!.cpuUsPerAnswer]),
  };
  const summary = Object.fromEntries(
    forms.map((f) => {
      const perSecond = median([...f.perSecond]);
      const cpuUsPerAnswer = median([...f.cpuUsPerAnswer]);
      return [
        f.form,
        {
          perSecond,
          cpuUsPerAnswer,
          perSecondVsProxy: round2(perSecond / base.perSecond),
          cpuVsProxy: round2(cpuUsPerAnswer / base.cpu),
        },
      ];
    }),
  ) as DecisionBenchResult['summary'];
  return {
    suite: 'decision',
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

const round2 = (x: number) => Math.round(x * 100) / 100;

export function decisionMarkdown(r: DecisionBenchResult): string {
  const names: Record<Form, string> = {
    proxy: 'proxied request (sidecar → user service)',
    'decision-http': 'decision, HTTP (ext_authz / forward-auth check)',
    'decision-grpc': 'decision, gRPC (Authorization/Check)',
  };
  const rows = FORMS.map((f) => {
    const s = r.summary[f];
    const failures = r.forms.find((x) => x.form === f)?.failures ?? 0;
    return `| ${names[f]} | ${s.perSecond} | ${s.perSecondVsProxy}x | ${s.cpuUsPerAnswer} | ${s.cpuVsProxy}x | ${failures} |`;
  });
  return [
    '# Decision service vs the proxy',
    '',
    `${r.startedAt}, ${r.cpus} CPUs, load average at start ${r.loadavgAtStart.map((x) => x.toFixed(1)).join(' ')}; ` +
      `${r.rounds} interleaved rounds of ${r.durationS} s per measurement, ${r.connections} connections or callers, one Redis, 1000 users in turn, a limit nobody reaches. ` +
      'Medians over the rounds. CPU is the serving process only (the proxied request also costs the user service).',
    '',
    `| form | answers/s at saturation | vs proxy | CPU µs per answer at ${r.rate}/s | vs proxy | non-OK answers |`,
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

// `make bench`: runs the benchmark suites side by side with their anchors and writes
// bench/results/<suite>.json and <suite>.md (the latest run; git history keeps earlier ones), then
// bench/results/summary.md (every suite's table, with the goals) and bench/results/chart.svg.
// It writes nothing outside bench/results/ (bench/README.md says how to read the results).
// `node bench/run.ts [suite ...]` runs only the named suites (the summary still covers the latest
// results of every suite). Add a suite by adding it to the registry below. The sidecar is bundled
// from the current sources first, so a suite never measures a stale or missing dist/sidecar.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SIDECAR_ENTRY } from '../operator/resources/route-deployment.ts';
import { bundleSidecar } from '../scripts/bundle.ts';
import { accuracyMarkdown, runAccuracyBench } from './accuracy.ts';
import { authFloodMarkdown, runAuthFloodBench } from './auth-flood.ts';
import { authMarkdown, runAuthBench } from './auth.ts';
import { batchWindowMarkdown, runBatchWindowBench } from './tools/batch-window.ts';
import { containerMemoryMarkdown, runContainerMemoryBench } from './tools/container-memory.ts';
import { decisionMarkdown, runDecisionBench } from './decision.ts';
import { gatewayJwtMarkdown, runGatewayJwtBench } from './gateway-jwt.ts';
import { gatewayMarkdown, runGatewayBench } from './gateway.ts';
import { instructionsMarkdown, runInstructionsBench } from './tools/instructions.ts';
import { operatorMarkdown, runOperatorBench, type OperatorBenchResult } from './operator.ts';
import { redisCostMarkdown, runRedisCostBench } from './redis-cost.ts';
import { runSignInFloodBench, signInFloodMarkdown } from './signin-flood.ts';
import { writeSummary } from './summary.ts';
import { allocMarkdown, runAllocBench } from './tools/alloc.ts';
import { runSyscallsBench, syscallsMarkdown } from './tools/syscalls.ts';
import { runTailBench, tailMarkdown } from './tools/tail.ts';
import { runTokenBench, tokenMarkdown } from './token.ts';

interface Suite {
  readonly run: (log: (line: string) => void) => Promise<unknown>;
  readonly markdown: (result: never) => string;
}

interface OperatorSuiteResult {
  readonly suite: 'operator';
  readonly runs: OperatorBenchResult[];
}

const operatorSizes = (process.env['BENCH_OPERATOR_ROUTES'] ?? '200,1000').split(',').map(Number).filter((n) => n > 0);

const suites: Record<string, Suite> = {
  gateway: { run: runGatewayBench, markdown: gatewayMarkdown as (r: never) => string },
  'gateway-jwt': { run: runGatewayJwtBench, markdown: gatewayJwtMarkdown as (r: never) => string },
  decision: { run: runDecisionBench, markdown: decisionMarkdown as (r: never) => string },
  accuracy: { run: runAccuracyBench, markdown: accuracyMarkdown as (r: never) => string },
  token: { run: runTokenBench, markdown: tokenMarkdown as (r: never) => string },
  auth: { run: runAuthBench, markdown: authMarkdown as (r: never) => string },
  'auth-flood': { run: runAuthFloodBench, markdown: authFloodMarkdown as (r: never) => string },
  'signin-flood': { run: runSignInFloodBench, markdown: signInFloodMarkdown as (r: never) => string },
  'redis-cost': { run: runRedisCostBench, markdown: redisCostMarkdown as (r: never) => string },
  'operator-scale': {
    run: async (log): Promise<OperatorSuiteResult> => {
      const runs: OperatorBenchResult[] = [];
      for (const n of operatorSizes) {
        log(`-- ${n} RateLimitRoutes`);
        runs.push(await runOperatorBench(log, n));
      }
      return { suite: 'operator', runs };
    },
    markdown: ((r: OperatorSuiteResult) => r.runs.map(operatorMarkdown).join('\n\n')) as (r: never) => string,
  },
};

/** Measurements of the optimisation work, run only when named (bench/tools/README.md says when). */
const tools: Record<string, Suite> = {
  instructions: { run: runInstructionsBench, markdown: instructionsMarkdown as (r: never) => string },
  'container-memory': { run: runContainerMemoryBench, markdown: containerMemoryMarkdown as (r: never) => string },
  'batch-window': { run: runBatchWindowBench, markdown: batchWindowMarkdown as (r: never) => string },
  tail: { run: runTailBench, markdown: tailMarkdown as (r: never) => string },
  alloc: { run: runAllocBench, markdown: allocMarkdown as (r: never) => string },
  syscalls: { run: runSyscallsBench, markdown: syscallsMarkdown as (r: never) => string },
};

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsDir = path.join(benchDir, 'results');
const repoRoot = path.join(benchDir, '..');
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in suites) && !(n in tools));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; known: ${[...Object.keys(suites), ...Object.keys(tools)].join(', ')}`);
  process.exit(2);
}

mkdirSync(resultsDir, { recursive: true });
await bundleSidecar(repoRoot, path.join(repoRoot, path.dirname(SIDECAR_ENTRY)));
const selected = wanted.length === 0 ? Object.entries(suites) : Object.entries({ ...suites, ...tools }).filter(([name]) => wanted.includes(name));
for (const [name, suite] of selected) {
  console.log(`== bench: ${name} (load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')})`);
  const result = await suite.run((line) => console.log(line));
  const md = suite.markdown(result as never);
  writeFileSync(path.join(resultsDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, `${name}.md`), `${md}\n`);
  console.log(`\n${md}\n\nwritten: bench/results/${name}.json, bench/results/${name}.md`);
}
const written = writeSummary(resultsDir);
console.log(`written: ${written.join(', ')}`);

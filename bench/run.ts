// `make bench`: runs the benchmark suites side by side with their anchors and writes
// bench/results/<suite>.json and <suite>.md (the latest run; git history keeps earlier ones), then
// bench/results/summary.md (every suite's table, with the goals) and bench/results/chart.svg.
// It writes nothing outside bench/results/ and dist/ (bench/README.md says how to read the results).
// `node bench/run.ts [suite ...]` runs only the named suites (the summary still covers the latest
// results of every suite). Add a suite by adding it to the registry below. Every program is
// bundled from the current sources first (as `make bundles` does), so a suite never measures a
// stale or missing dist/<program>/main.mjs, also from a fresh clone.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLED_PROGRAMS, bundleProgram, type BundledProgram } from '../scripts/bundle.ts';
import { decisionMarkdown, runDecisionBench } from './decision.ts';
import { gatewayMarkdown } from './gateway-report.ts';
import { runGatewayBench } from './gateway.ts';
import { operatorMarkdown, type OperatorBenchResult } from './operator-report.ts';
import { runOperatorBench } from './operator.ts';
import { redisCostMarkdown } from './redis-cost-report.ts';
import { runRedisCostBench } from './redis-cost.ts';
import { writeSummary } from './summary.ts';
import { tokenMarkdown } from './token-report.ts';
import { runTokenBench } from './token.ts';

interface Suite {
  readonly run: (log: (line: string) => void) => Promise<unknown>;
  readonly markdown: (result: never) => string;
}

interface OperatorSuiteResult {
  readonly suite: 'operator';
  readonly runs: OperatorBenchResult[];
}

const operatorSizes = (process.env['BENCH_OPERATOR_ROUTES'] ?? '200,1000')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);

const suites: Record<string, Suite> = {
  gateway: { run: runGatewayBench, markdown: gatewayMarkdown as (r: never) => string },
  decision: { run: runDecisionBench, markdown: decisionMarkdown as (r: never) => string },
  token: { run: runTokenBench, markdown: tokenMarkdown as (r: never) => string },
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
    markdown: ((r: OperatorSuiteResult) => r.runs.map(operatorMarkdown).join('\n\n')) as (
      r: never,
    ) => string,
  },
};

const benchDir = path.dirname(fileURLToPath(import.meta.url));
const resultsDir = path.join(benchDir, 'results');
const repoRoot = path.join(benchDir, '..');
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in suites));
if (unknown.length > 0) {
  console.error(
    `unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(suites).join(', ')}`,
  );
  process.exit(2);
}

mkdirSync(resultsDir, { recursive: true });
for (const program of Object.keys(BUNDLED_PROGRAMS) as BundledProgram[])
  await bundleProgram(repoRoot, program, path.join(repoRoot, 'dist', program));
const selected =
  wanted.length === 0
    ? Object.entries(suites)
    : Object.entries(suites).filter(([name]) => wanted.includes(name));
for (const [name, suite] of selected) {
  console.log(
    `== bench: ${name} (load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')})`,
  );
  const result = await suite.run((line) => console.log(line));
  const md = suite.markdown(result as never);
  writeFileSync(path.join(resultsDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, `${name}.md`), `${md}\n`);
  console.log(`\n${md}\n\nwritten: bench/results/${name}.json, bench/results/${name}.md`);
}
const written = writeSummary(resultsDir);
console.log(`written: ${written.join(', ')}`);

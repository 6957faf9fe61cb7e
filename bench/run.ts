// `make bench`: bundles every program from the current sources (as `make bundles` does, so no
// suite measures a stale dist/), runs the suites of the registry below (`node bench/run.ts [suite
// ...]`: the named ones) and writes bench/results/<suite>.json and .md, then summary.md and
// chart.svg from the latest results of every suite. Nothing is written outside bench/results/ and
// dist/ (bench/README.md says how to read the results).
import os from 'node:os';
import path from 'node:path';
import { BUNDLED_PROGRAMS, bundleProgram, type BundledProgram } from '../scripts/bundle.ts';
import { repoRoot } from '../test/harness/programs.ts';
import { decisionMarkdown, runDecisionBench } from './decision.ts';
import { gatewayMarkdown } from './gateway-report.ts';
import { runGatewayBench } from './gateway.ts';
import { loadavg } from './lib/measure.ts';
import { writeResult } from './lib/suite.ts';
import { operatorMarkdown } from './operator-readings.ts';
import { runOperatorScale } from './operator.ts';
import { redisCostMarkdown, runRedisCostBench } from './redis-cost.ts';
import { writeSummary } from './summary.ts';
import { runTokenBench, tokenMarkdown } from './token.ts';

/** A suite: how it runs, and its result's Markdown. */
const suite =
  <R>(run: (log: (line: string) => void) => Promise<R>, markdown: (r: R) => string) =>
  async (log: (line: string) => void) => {
    const result = await run(log);
    return { result, md: markdown(result) };
  };

const suites = {
  gateway: suite(runGatewayBench, gatewayMarkdown),
  decision: suite(runDecisionBench, decisionMarkdown),
  token: suite(runTokenBench, tokenMarkdown),
  'redis-cost': suite(runRedisCostBench, redisCostMarkdown),
  'operator-scale': suite(runOperatorScale, (r) => r.runs.map(operatorMarkdown).join('\n\n')),
};

const resultsDir = path.join(repoRoot, 'bench', 'results');
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in suites));
if (unknown.length > 0) {
  console.error(
    `unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(suites).join(', ')}`,
  );
  process.exit(2);
}

for (const program of Object.keys(BUNDLED_PROGRAMS) as BundledProgram[])
  await bundleProgram(repoRoot, program, path.join(repoRoot, 'dist', program));
for (const [name, run] of Object.entries(suites)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`== bench: ${name} (load average ${loadavg(os.loadavg())})`);
  const { result, md } = await run((line) => console.log(line));
  writeResult(resultsDir, name, result, md);
}
console.log(`written: ${writeSummary(resultsDir).join(', ')}`);

// `make bench`: runs the benchmark suites side by side and writes bench/results/<suite>.json and
// <suite>.md (the latest run; git history keeps earlier ones). `node bench/run.ts [suite ...]`
// runs only the named suites. Add a suite by adding it to the registry below.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gatewayMarkdown, runGatewayBench } from './gateway.ts';

interface Suite {
  readonly run: (log: (line: string) => void) => Promise<unknown>;
  readonly markdown: (result: never) => string;
}

const suites: Record<string, Suite> = {
  gateway: { run: runGatewayBench, markdown: gatewayMarkdown as (r: never) => string },
};

const resultsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
const wanted = process.argv.slice(2);
const unknown = wanted.filter((n) => !(n in suites));
if (unknown.length > 0) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; known: ${Object.keys(suites).join(', ')}`);
  process.exit(2);
}

mkdirSync(resultsDir, { recursive: true });
for (const [name, suite] of Object.entries(suites)) {
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  console.log(`== bench: ${name}`);
  const result = await suite.run((line) => console.log(line));
  const md = suite.markdown(result as never);
  writeFileSync(path.join(resultsDir, `${name}.json`), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, `${name}.md`), `${md}\n`);
  console.log(`\n${md}\n\nwritten: bench/results/${name}.json, bench/results/${name}.md`);
}

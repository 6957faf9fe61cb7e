// Adds up the reliability counts every test file wrote to test-results/reliability/ (see
// test/harness/reliability-setup.ts): cases tried, faults injected, requests sent, log lines
// scanned for secrets, failures. Prints a Markdown table (the numbers in docs/reference/reliability.md) and
// writes test-results/reliability-summary.json.
//   node scripts/reliability-summary.ts
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

interface FileCounts {
  readonly file: string;
  readonly cases: Record<string, number>;
  readonly faults: Record<string, number>;
  readonly requests: Record<string, number>;
  readonly failures: Record<string, number>;
  readonly logScan?: {
    readonly lines: number;
    readonly findings: number;
    readonly trackedSecrets: number;
  };
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'test-results', 'reliability');
if (!existsSync(dir)) {
  console.error('no test-results/reliability/: run the tests first (make test)');
  process.exit(1);
}
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((f) => JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as FileCounts);

const sum = (pick: (f: FileCounts) => Record<string, number>) => {
  const out = new Map<string, number>();
  for (const f of files)
    for (const [k, v] of Object.entries(pick(f))) out.set(k, (out.get(k) ?? 0) + v);
  return out;
};
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

const cases = sum((f) => f.cases);
const faults = sum((f) => f.faults);
const requests = sum((f) => f.requests);
const failures = sum((f) => f.failures);
const logLines = files.reduce((a, f) => a + (f.logScan?.lines ?? 0), 0);
const secrets = files.reduce((a, f) => a + (f.logScan?.trackedSecrets ?? 0), 0);
const findings = files.reduce((a, f) => a + (f.logScan?.findings ?? 0), 0);

const summary = {
  testFiles: files.length,
  casesTried: total(cases) - (cases.get('log lines scanned for secrets') ?? 0),
  faultsInjected: total(faults),
  requestsSent: total(requests),
  logLinesScanned: logLines,
  secretsTracked: secrets,
  secretFindings: findings,
  failures: total(failures),
  detail: {
    cases: Object.fromEntries(cases),
    faults: Object.fromEntries(faults),
    requests: Object.fromEntries(requests),
    failures: Object.fromEntries(failures),
  },
};
writeFileSync(
  path.join(root, 'test-results', 'reliability-summary.json'),
  JSON.stringify(summary, null, 2),
);

const row = (k: string, v: number) => `| ${k} | ${v.toLocaleString('en-US')} |`;
console.log(
  [
    '| measure | count |',
    '|---|---|',
    row('test files reporting', summary.testFiles),
    row(
      'cases tried (property runs, fuzz inputs, schema mutations, integrity checks)',
      summary.casesTried,
    ),
    row('faults injected', summary.faultsInjected),
    row('requests sent (HTTP via fetch + raw-socket exchanges)', summary.requestsSent),
    row('log lines scanned for secrets', summary.logLinesScanned),
    row(
      'secrets tracked (codes, tokens, client secrets, passwords, cookies)',
      summary.secretsTracked,
    ),
    row('secrets found in logs', summary.secretFindings),
    row('failures', summary.failures),
  ].join('\n'),
);
for (const [title, m] of [
  ['cases', cases],
  ['faults', faults],
  ['requests', requests],
] as const) {
  console.log(`\n${title}:`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]))
    console.log(`  ${String(v).padStart(8)}  ${k}`);
}

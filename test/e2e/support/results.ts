// Results the e2e tier measures on the real cluster (image sizes, pods' footprint, times), written
// beside the benchmarks as bench/results/<name>.json and a Markdown table in <name>.md.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../harness/programs.ts';

export interface ResultTable {
  readonly title: string;
  readonly note: string;
  readonly rows: ReadonlyArray<Record<string, string | number | boolean | null>>;
  readonly extra?: Record<string, unknown>;
}

export function writeResult(name: string, table: ResultTable): void {
  const dir = path.join(repoRoot, 'bench', 'results');
  const json = {
    suite: name,
    startedAt: new Date().toISOString(),
    note: table.note,
    rows: table.rows,
    ...table.extra,
  };
  writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify(json, null, 2)}\n`);
  const columns = [...new Set(table.rows.flatMap((r) => Object.keys(r)))];
  const md = [
    `# ${table.title}`,
    '',
    table.note,
    '',
    `| ${columns.join(' | ')} |`,
    `|${columns.map(() => '---').join('|')}|`,
    ...table.rows.map((r) => `| ${columns.map((c) => String(r[c] ?? '')).join(' | ')} |`),
    '',
  ].join('\n');
  writeFileSync(path.join(dir, `${name}.md`), md);
}

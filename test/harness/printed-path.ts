// The build scripts that cache a tool outside the repository (test/harness/go-tool-cache.sh) print
// `NAME=path` with --print-env, building first when the cache lacks the tool: one reader for all.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './programs.ts';

/** The value of `NAME=` in a script's --print-env output. */
export function printedValue(out: string, name: string, script: string): string {
  const line = out.split('\n').find((l) => l.startsWith(`${name}=`));
  if (line === undefined) throw new Error(`${script} printed no ${name}=`);
  return line.slice(name.length + 1);
}

/** Runs a build script (path from the repository root) with --print-env and returns what it names NAME. */
export function printedPath(script: string, name: string): string {
  const out = execFileSync(path.join(repoRoot, script), ['--print-env'], { encoding: 'utf8' });
  return printedValue(out, name, script);
}

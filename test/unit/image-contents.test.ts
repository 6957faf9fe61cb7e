// Every image carries one bundle of its program (scripts/build-programs.ts), built from lib/ and
// the program's folder with the production dependencies. So every module a program loads at run
// time must be a production dependency (a development-only package would be bundled silently), and
// no runtime file may import from outside the runtime folders (scripts/, test/ are not in the
// build). Which program folder may import which is the lint boundary rule's job.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const RUNTIME_DIRS = ['lib', 'operator', 'sidecar', 'services'];
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  dependencies: Record<string, string>;
};

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [p] : [];
  });
}

/** Value imports (import type and `import { type X }`-only lines are erased by type stripping). */
function valueImports(text: string): string[] {
  const specs: string[] = [];
  for (const m of text.matchAll(
    /^\s*(import|export)\s+(?!type\s)([^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm,
  )) {
    const clause = m[2] ?? '';
    if (/^\s*\{\s*(type\s+\w+\s*,?\s*)+\}\s*from\s+$/.test(clause)) continue;
    specs.push(m[3]!);
  }
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) specs.push(m[1]!);
  return specs;
}

const packageName = (spec: string) =>
  spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
const builtins = new Set(builtinModules);

describe('what the images carry', () => {
  const files = RUNTIME_DIRS.flatMap(sources).filter((f) => !/(^|\/)local\.ts$/.test(f));

  it('finds the programs', () => {
    expect(files).toEqual(expect.arrayContaining(['operator/api/index.ts']));
  });

  it('imports only production dependencies and files inside the image, from every runtime file', () => {
    const problems: string[] = [];
    for (const file of files) {
      for (const spec of valueImports(readFileSync(file, 'utf8'))) {
        if (spec.startsWith('node:') || builtins.has(spec)) continue;
        if (spec.startsWith('.')) {
          const target = path.normalize(path.join(path.dirname(file), spec));
          if (!RUNTIME_DIRS.some((d) => target.startsWith(`${d}/`)))
            problems.push(`${file} imports ${spec}: outside the image`);
        } else if (!(packageName(spec) in pkg.dependencies)) {
          problems.push(
            `${file} imports ${spec}: not a production dependency (npm ci --omit=dev drops it)`,
          );
        }
      }
    }
    expect(problems).toEqual([]);
  });
});

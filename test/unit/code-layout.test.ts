// Code files stay small enough to read in one sitting: one concern each, under 300 lines as
// prettier lays them out. Test files are exempt (a file is one behaviour's cases, with its fixture).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const CODE_DIRS = ['lib', 'sidecar', 'services', 'operator', 'bench', 'scripts'];
const MAX_LINES = 300;

function codeFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory())
      return entry.name === 'node_modules' || rel === 'bench/results' ? [] : codeFiles(rel);
    return /\.(ts|mjs|js)$/.test(entry.name) ? [rel] : [];
  });
}

describe('code layout', () => {
  it(`no code file passes ${MAX_LINES} lines`, () => {
    const files = CODE_DIRS.flatMap(codeFiles);
    expect(files.length).toBeGreaterThan(100);
    const long = files
      .map((file) => ({
        file,
        lines: readFileSync(path.join(root, file), 'utf8').split('\n').length - 1,
      }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});

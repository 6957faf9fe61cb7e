// The sidecar of a git revision, bundled by that revision's own recipe: side A of bench/tools/ab.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { bundleNodeProgram } from '../../scripts/bundle.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Bundles the sidecar of `rev` with rev's own recipe (scripts/bundle.ts), from a git archive
 * beside the repository's node_modules, into dir.
 */
export async function bundleRevision(rev: string, dir: string): Promise<string> {
  const src = path.join(dir, 'src');
  execFileSync('mkdir', ['-p', src]);
  // Older revisions kept the shared code (and the Lua script) under sidecar/; newer ones under lib/.
  const inRev = (p: string) =>
    spawnSync('git', ['-C', repoRoot, 'cat-file', '-e', `${rev}:${p}`]).status === 0;
  const paths = ['sidecar', 'lib', 'scripts/bundle.ts'].filter(inRev);
  execFileSync('sh', [
    '-c',
    `git -C "${repoRoot}" archive "${rev}" ${paths.join(' ')} | tar -x -C "${src}"`,
  ]);
  symlinkSync(path.join(repoRoot, 'node_modules'), path.join(src, 'node_modules'));
  const out = path.join(dir, 'a', 'main.mjs');
  const recipe = (await import(path.join(src, 'scripts', 'bundle.ts'))) as {
    bundleNodeProgram: typeof bundleNodeProgram;
  };
  await recipe.bundleNodeProgram(path.join(src, 'sidecar', 'main.ts'), out);
  const lua = ['lib/token-bucket/token-bucket.lua', 'sidecar/stores/token-bucket.lua'].find(inRev);
  if (lua === undefined)
    throw new Error(`${rev} has no token-bucket.lua where this tool looks for it`);
  copyFileSync(path.join(src, lua), path.join(dir, 'a', 'token-bucket.lua'));
  return out;
}

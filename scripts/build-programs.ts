// `make bundles`: bundles every program (sources and runtime dependencies) each into one
// JavaScript file, dist/<program>/main.mjs, as its image runs it (the Dockerfile's PROGRAM):
// one module instead of hundreds, no TypeScript type stripping at start (amaro's WebAssembly alone
// is ~18 MiB of resident memory), and whitespace-minified sources (V8 keeps every script's source
// text in the heap). ADR 0008 has the measurements.
//   node scripts/build-programs.ts [program ...] [--outdir DIR]   (DIR: where <program>/ goes; dist by default)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BUNDLED_PROGRAMS, bundleProgram, type BundledProgram } from './bundle.ts';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  options: { outdir: { type: 'string' } },
  allowPositionals: true,
  strict: true,
});
const known = Object.keys(BUNDLED_PROGRAMS);
const unknown = positionals.filter((p) => !known.includes(p));
if (unknown.length > 0) {
  console.error(
    `build-programs: unknown program(s) ${unknown.join(', ')}; known: ${known.join(', ')}`,
  );
  process.exit(2);
}
const programs = (positionals.length > 0 ? positionals : known) as BundledProgram[];
const root = path.resolve(repo, values.outdir ?? 'dist');

for (const program of programs) {
  const outdir = path.join(root, program);
  const bytes = await bundleProgram(repo, program, outdir);
  console.log(
    `build-programs: ${path.relative(repo, outdir)}/main.mjs (${(bytes / 1024).toFixed(0)} KiB)`,
  );
}

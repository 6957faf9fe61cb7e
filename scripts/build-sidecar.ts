// `make build-sidecar`: bundles the sidecar (sources and runtime dependencies) into one JavaScript
// file, dist/sidecar/main.mjs, with the Lua script beside it. This is what the sidecar image and
// the rendered pods run (issue 5, memory): one module instead of ~400, no TypeScript type
// stripping at start (amaro's WebAssembly alone is ~18 MiB RSS), and whitespace-minified sources
// (V8 keeps every script's source text in the heap). Identifiers are kept, so stack traces stay
// readable. The other programs still run from their TypeScript sources (ADR 0001).
//   node scripts/build-sidecar.ts [--outdir DIR]
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bundleSidecar } from './bundle.ts';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { outdir: { type: 'string' } }, strict: true });
const outdir = path.resolve(repo, values.outdir ?? 'dist/sidecar');

const bytes = await bundleSidecar(repo, outdir);
console.log(`build-sidecar: ${path.relative(repo, outdir)}/main.mjs (${(bytes / 1024).toFixed(0)} KiB) + token-bucket.lua`);

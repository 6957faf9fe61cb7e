// One Node program bundled the way the sidecar image runs it (scripts/build-sidecar.ts): its
// sources and runtime dependencies in one ES module, whitespace-minified (V8 keeps every script's
// source text in the heap), identifiers not minified so stack traces stay readable. No keepNames:
// its __name helper runs Object.defineProperty on every function made at run time, so each
// request paid for it in ioredis, undici and the sidecar's own class-field arrows (issue 5,
// optimization.md); only the ~140 functions esbuild renames on a collision (none of Portcullis'
// own) lose their original .name. The gateway benchmark bundles its bare node:http + undici proxy
// with the same options, so that the floor it reports for a Node proxy runs exactly as the
// sidecar does.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/** Bundles `entry` into `outfile`; answers the bundle's size in bytes. */
export async function bundleNodeProgram(entry: string, outfile: string): Promise<number> {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22.19',
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: false,
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
    // CommonJS dependencies (ioredis, pino, prom-client) call require() for Node built-ins.
    banner: { js: "import { createRequire as __portcullisRequire } from 'node:module'; const require = __portcullisRequire(import.meta.url);" },
  });
  return Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
}

/**
 * The sidecar as its image runs it: `repo`'s sidecar/main.ts bundled into `outdir`/main.mjs, with
 * the Lua script beside it (sidecar/stores/redis.ts reads it from beside itself:
 * new URL('./token-bucket.lua', import.meta.url)). Answers the bundle's size in bytes.
 */
export async function bundleSidecar(repo: string, outdir: string): Promise<number> {
  mkdirSync(outdir, { recursive: true });
  const bytes = await bundleNodeProgram(path.join(repo, 'sidecar', 'main.ts'), path.join(outdir, 'main.mjs'));
  copyFileSync(path.join(repo, 'sidecar', 'stores', 'token-bucket.lua'), path.join(outdir, 'token-bucket.lua'));
  return bytes;
}

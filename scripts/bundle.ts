// A Node program bundled the way its image runs it (scripts/build-programs.ts): its sources and
// runtime dependencies in one ES module, whitespace-minified (V8 keeps every script's source text
// in the heap), identifiers not minified so stack traces stay readable. No keepNames: its __name
// helper runs Object.defineProperty on every function made at run time, so each request paid for
// it in ioredis, undici and the sidecar's own class-field arrows; only the ~140 functions esbuild
// renames on a collision (none of Portcullis' own) lose their original .name. The gateway
// benchmark bundles its bare node:http + undici proxy with the same options, so that the floor it
// reports for a Node proxy runs exactly as the sidecar does.
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * Every program by image name, with its entry file: each image runs its program as a bundle
 * (the Dockerfile's PROGRAM). The memory counts most for the long-running ones (a sidecar per
 * route pod, an auth server per namespace, the operator); the example services ship the same way
 * so that one image shape serves all.
 */
export const BUNDLED_PROGRAMS = {
  sidecar: 'sidecar/main.ts',
  operator: 'operator/main.ts',
  'auth-server': 'services/auth-server/main.ts',
  'user-service': 'services/user-service/main.ts',
  'demo-client': 'services/demo-client/main.ts',
} as const;
export type BundledProgram = keyof typeof BUNDLED_PROGRAMS;

/** Where a program's bundle lands under the repository (and under /app in its image). */
export function bundleEntry(program: BundledProgram): string {
  return `dist/${program}/main.mjs`;
}

/** The Redis token-bucket script's caller reads it from beside itself (new URL('./token-bucket.lua', import.meta.url)). */
const LUA_SOURCE = 'lib/token-bucket/take-script.ts';
const LUA_SCRIPT = 'lib/token-bucket/token-bucket.lua';

/** Bundles `entry` into `outfile`; answers the bundle's size in bytes and the repository files it holds. */
export async function bundleNodeProgram(
  entry: string,
  outfile: string,
): Promise<{ bytes: number; inputs: string[] }> {
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
    banner: {
      js: "import { createRequire as __portcullisRequire } from 'node:module'; const require = __portcullisRequire(import.meta.url);",
    },
  });
  return {
    bytes: Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0),
    inputs: Object.keys(result.metafile.inputs),
  };
}

/**
 * `program` as its image runs it: bundled from `repo` into `outdir`/main.mjs, with the token-bucket
 * Lua script beside it when the program holds the Redis bucket store (the sidecar, and the auth
 * server's sign-in throttle). Answers the bundle's size in bytes.
 */
export async function bundleProgram(
  repo: string,
  program: BundledProgram,
  outdir: string,
): Promise<number> {
  mkdirSync(outdir, { recursive: true });
  const { bytes, inputs } = await bundleNodeProgram(
    path.join(repo, BUNDLED_PROGRAMS[program]),
    path.join(outdir, 'main.mjs'),
  );
  const fromRepo = new Set(inputs.map((i) => path.relative(repo, path.resolve(i))));
  if (fromRepo.has(LUA_SOURCE))
    copyFileSync(path.join(repo, LUA_SCRIPT), path.join(outdir, path.basename(LUA_SCRIPT)));
  return bytes;
}

/** The sidecar as its image runs it (dist/sidecar/main.mjs and its Lua script, under `outdir`). */
export function bundleSidecar(repo: string, outdir: string): Promise<number> {
  return bundleProgram(repo, 'sidecar', outdir);
}

// The programs a gateway measurement puts in front of the upstream, started the same way by every
// suite and by bench/tools/ab.ts: the sidecar as the operator deploys it, the bare proxy (the floor
// of any Node gateway) run with the same settings, and the upstream itself.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { SIDECAR_ENTRY, SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { bundleNodeProgram } from '../../scripts/bundle.ts';
import { freePort } from '../../test/harness/ports.ts';
import {
  startProgram,
  startSidecar,
  type Program,
  type RunningSidecar,
  type SidecarLaunch,
  type StartOptions,
} from '../../test/harness/programs.ts';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BARE_PROXY_ENTRY = 'dist/bench/bare-proxy.mjs';

/** A limit nobody reaches: 1e9 tokens of burst, refilled at 1e9/s (every request does the full limiter work). */
export const unreachable = {
  replenishRate: 1_000_000_000,
  burstCapacity: 1_000_000_000,
  requestedTokens: 1,
};
/** nginx's limit_req at a rate and burst nobody reaches. */
export const nginxUnreachable = { ratePerSecond: 1_000_000, burst: 1_000_000 } as const;

/** The user service on a free port: the upstream of every gateway measurement. */
export async function startUpstream(
  name = 'bench-user-service',
): Promise<{ url: string; port: number; program: Program }> {
  const port = await freePort();
  const program = await startProgram({
    entry: 'services/user-service/main.ts',
    env: { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    waitPort: port,
    name,
  });
  return { url: `http://127.0.0.1:${port}`, port, program };
}

/**
 * A sidecar in front of upstreamUrl as deployed: the bundle (dist/sidecar/main.mjs) with the
 * container's environment (operator SIDECAR_ENV); its limiter is `unreachable` keyed by USER-ID
 * unless launch.limiter says otherwise. launch.nodeOptions go after the deployed ones (a later flag wins).
 */
export async function startBenchSidecar(
  upstreamUrl: string,
  redisUrl: string | undefined,
  name: string,
  launch: Pick<SidecarLaunch, 'node' | 'launcher' | 'waitPortMs'> & {
    limiter?: SidecarConfigInput['limiter'];
    nodeOptions?: string;
  } = {},
): Promise<RunningSidecar> {
  const { limiter = unreachable, nodeOptions, ...options } = launch;
  const config = {
    upstream: { url: upstreamUrl },
    route: { id: 'bench', path: '/**' },
    limiter,
    ...(redisUrl !== undefined ? { redis: { url: redisUrl, commandTimeoutMs: 1000 } } : {}),
    logLevel: 'warn' as const,
  };
  return startSidecar(config, {
    name,
    entry: SIDECAR_ENTRY,
    env: withNodeOptions({ ...SIDECAR_ENV }, nodeOptions),
    ...options,
  });
}

export const BARE_PROXY_DESCRIPTION =
  "node:http + undici Pool, no limiter, bundled and run with the sidecar's heap caps (floor of a Node proxy)";

/**
 * The bare proxy (bench/peers/bare-proxy.ts) run as the sidecar is deployed: bundled with the same
 * options (dist/bench/bare-proxy.mjs) and started with the sidecar's environment (heap caps, malloc
 * arenas), so that its CPU, latency and memory are the floor of the sidecar's, setting for setting.
 */
export async function startBareProxy(
  upstreamUrl: string,
  name: string,
  launch: Pick<StartOptions, 'launcher' | 'waitPortMs'> & { nodeOptions?: string } = {},
): Promise<{
  url: string;
  pid: number | undefined;
  program: Program;
  stop: () => Promise<unknown>;
}> {
  await bundleNodeProgram(
    path.join(repoRoot, 'bench', 'peers', 'bare-proxy.ts'),
    path.join(repoRoot, BARE_PROXY_ENTRY),
  );
  const port = await freePort();
  const { nodeOptions, ...options } = launch;
  const env = withNodeOptions(
    { ...SIDECAR_ENV, PORT: String(port), UPSTREAM_URL: upstreamUrl },
    nodeOptions,
  );
  const p = await startProgram({ entry: BARE_PROXY_ENTRY, env, waitPort: port, name, ...options });
  return { url: `http://127.0.0.1:${port}`, pid: p.child.pid, program: p, stop: () => p.stop() };
}

/** `env` with `more` appended to its NODE_OPTIONS. */
export function withNodeOptions(
  env: Record<string, string>,
  more: string | undefined,
): Record<string, string> {
  if (more !== undefined && more !== '')
    env['NODE_OPTIONS'] = `${env['NODE_OPTIONS'] ?? ''} ${more}`.trim();
  return env;
}

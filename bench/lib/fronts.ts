// The programs a gateway measurement puts in front of the upstream, started the same way by the
// suites and by bench/tools/ab.ts: the sidecar as the operator deploys it, and the bare proxy (the
// floor of any Node gateway) run with the same settings.
import path from 'node:path';
import type { SidecarConfigInput } from '../../lib/config/sidecar.ts';
import { SIDECAR_ENTRY, SIDECAR_ENV } from '../../operator/resources/route/deployment.ts';
import { bundleNodeProgram } from '../../scripts/bundle.ts';
import { freePort } from '../../test/harness/ports.ts';
import { repoRoot, startProgram, startSidecar } from '../../test/harness/programs.ts';

const BARE_PROXY_ENTRY = 'dist/bench/bare-proxy.mjs';

/** A limit nobody reaches: 1e9 tokens of burst, refilled at 1e9/s (every request does the full limiter work). */
export const unreachable = { replenishRate: 1e9, burstCapacity: 1e9, requestedTokens: 1 };
type Limiter = SidecarConfigInput['limiter'];

/** A sidecar's config in front of `upstream`, on `redis` (or in memory), keyed by USER-ID unless `limiter` says otherwise. */
export function benchSidecarConfig(upstream: string, redis?: string, limiter?: Limiter) {
  return {
    upstream: { url: upstream },
    route: { id: 'bench', path: '/**' },
    limiter: limiter ?? unreachable,
    ...(redis !== undefined ? { redis: { url: redis, commandTimeoutMs: 1000 } } : {}),
    logLevel: 'warn' as const,
  };
}

/** A sidecar as deployed: the bundle (dist/sidecar/main.mjs) with the container's environment (operator SIDECAR_ENV), `more` over benchSidecarConfig. */
export function startBenchSidecar(
  upstream: string,
  redis: string | undefined,
  name: string,
  more: Partial<SidecarConfigInput> = {},
) {
  const config = { ...benchSidecarConfig(upstream, redis), ...more };
  return startSidecar(config, { name, entry: SIDECAR_ENTRY, env: { ...SIDECAR_ENV } });
}

/** The program `entry` on a free loopback port (env PORT) with `env`: its URL and the program. */
export async function startPeer(entry: string, name: string, env: Record<string, string>) {
  const port = await freePort();
  const withPort = { ...env, PORT: String(port) };
  const program = await startProgram({ entry, env: withPort, waitPort: port, name });
  return { url: `http://127.0.0.1:${port}`, program };
}

/**
 * The bare proxy (bench/peers/bare-proxy.ts) run as the sidecar is deployed: bundled with the same
 * options (dist/bench/bare-proxy.mjs) and started with the sidecar's environment (heap caps, malloc
 * arenas), so that its CPU, latency and memory are the floor of the sidecar's, setting for setting.
 */
export async function startBareProxy(upstreamUrl: string, name: string) {
  await bundleNodeProgram(
    path.join(repoRoot, 'bench', 'peers', 'bare-proxy.ts'),
    path.join(repoRoot, BARE_PROXY_ENTRY),
  );
  return startPeer(BARE_PROXY_ENTRY, name, { ...SIDECAR_ENV, UPSTREAM_URL: upstreamUrl });
}

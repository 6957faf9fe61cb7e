// The fronts of the gateway suite (bench/gateway.ts lists them), started beside one user service
// and one redis-server, in the order a round measures them; and the check that a jwt gateway does
// its job before it is measured.
import { freePort } from '../test/harness/ports.ts';
import { startProgram } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import {
  BARE_PROXY_DESCRIPTION,
  nginxUnreachable,
  startBareProxy,
  startBenchSidecar,
  startUpstream,
  unreachable,
} from './lib/fronts.ts';
import type { JwtIssuer } from './lib/jwt-issuer.ts';
import { startNginx } from './peers/nginx.ts';

export const AUDIENCE = 'bench-service';

export interface Target {
  readonly name: string;
  readonly description: string;
  readonly base: string;
  /** The per-user header lines the load generators send in turn (USER-ID or a bearer token). */
  readonly headerFile: string;
  /** Processes whose CPU counts as the front's (the gateway itself; the upstream for direct). */
  readonly cpuPids: () => (number | undefined)[];
  readonly rssPids: () => (number | undefined)[];
}

/** Refuses to measure a jwt gateway that does not do the job: 401 without or with a forged token, 200 with a real one. */
export async function checkJwtGateway(name: string, base: string, token: string): Promise<void> {
  const [head, payload, signature = ''] = token.split('.');
  const forged = `${head}.${payload}.${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
  const status = async (headers: Record<string, string>) =>
    (await fetch(`${base}/healthcheck/ready`, { headers })).status;
  const seen = [
    await status({}),
    await status({ authorization: `Bearer ${forged}` }),
    await status({ authorization: `Bearer ${token}` }),
  ];
  if (seen.join() !== '401,401,200')
    throw new Error(
      `${name}: no token, a forged token and a valid token answered ${seen.join(', ')}, not 401, 401, 200`,
    );
}

/** `userIdFile` and `bearerFile`: the header lines of the users in turn (USER-ID, or their tokens from `issuer`). */
export async function startGatewayFronts(
  issuer: JwtIssuer,
  userIdFile: string,
  bearerFile: string,
): Promise<{ readonly targets: Target[]; stop(): Promise<void> }> {
  const redis = await startRedis();
  const upstream = await startUpstream();
  const user = upstream.program;
  const userUrl = upstream.url;
  const jwt = {
    issuer: issuer.issuer,
    audience: AUDIENCE,
    jwksUrl: issuer.jwksUrl,
    claim: 'sub',
    algorithms: ['ES256' as const],
    cacheSize: 10_000,
  };
  const viaRedis = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-redis');
  const viaMemory = await startBenchSidecar(userUrl, undefined, 'bench-sidecar-memory');
  const viaJwt = await startBenchSidecar(userUrl, redis.url, 'bench-sidecar-jwt', {
    limiter: { ...unreachable, key: 'jwt', keyHeader: 'USER-ID', jwt },
  });
  const nginx = await startNginx({ upstreamPort: upstream.port, ...nginxUnreachable });
  const startPeer = async (name: string, extra: Record<string, string>) => {
    const port = await freePort();
    const env = {
      PORT: String(port),
      UPSTREAM_URL: userUrl,
      REDIS_URL: redis.url,
      MAX: String(unreachable.burstCapacity),
      WINDOW_MS: '1000',
      ...extra,
    };
    return {
      url: `http://127.0.0.1:${port}`,
      program: await startProgram({ entry: 'bench/peers/node-peer.ts', env, waitPort: port, name }),
    };
  };
  const peer = await startPeer('bench-node-peer', {});
  const peerJwt = await startPeer('bench-node-peer-jwt', {
    JWT_JWKS_URL: issuer.jwksUrl,
    JWT_ISSUER: issuer.issuer,
    JWT_AUDIENCE: AUDIENCE,
  });
  const bare = await startBareProxy(userUrl, 'bench-bare-proxy');

  // The order of a round (rotated from round to round): the Redis sidecar sits between the two
  // anchors of its throughput goals, nginx and the Node peer, and the jwt sidecar beside its Node
  // peer, so that each goal's pair is measured back to back in all rounds but one.
  const one = (
    name: string,
    description: string,
    base: string,
    pid: () => number | undefined,
    headerFile = userIdFile,
  ): Target => ({
    name,
    description,
    base,
    headerFile,
    cpuPids: () => [pid()],
    rssPids: () => [pid()],
  });
  const targets: Target[] = [
    one('direct', 'user service directly (the ceiling)', userUrl, () => user.child.pid),
    {
      ...one('nginx', 'nginx 1.22 (Debian), proxy_pass + limit_req, 1 worker', nginx.url, () =>
        nginx.workerPid(),
      ),
      rssPids: () => [nginx.child.pid, nginx.workerPid()],
    },
    one(
      'sidecar-redis',
      'Portcullis sidecar, Redis token bucket',
      viaRedis.url,
      () => viaRedis.program.child.pid,
    ),
    one(
      'node-peer',
      'fastify + @fastify/http-proxy + @fastify/rate-limit (Redis store)',
      peer.url,
      () => peer.program.child.pid,
    ),
    one('bare-proxy', BARE_PROXY_DESCRIPTION, bare.url, () => bare.pid),
    one(
      'sidecar-memory',
      'Portcullis sidecar, in-memory token bucket',
      viaMemory.url,
      () => viaMemory.program.child.pid,
    ),
    one(
      'node-peer-jwt',
      'the Node peer + @fastify/jwt with get-jwks (ES256, iss, aud, typ), fast-jwt cache 10,000, key sub',
      peerJwt.url,
      () => peerJwt.program.child.pid,
      bearerFile,
    ),
    one(
      'sidecar-jwt',
      'Portcullis sidecar, Redis token bucket, key jwt (ES256, iss, aud, typ), cache 10,000, key sub',
      viaJwt.url,
      () => viaJwt.program.child.pid,
      bearerFile,
    ),
  ];
  return {
    targets,
    async stop() {
      await Promise.allSettled([
        viaRedis.program.stop(),
        viaMemory.program.stop(),
        viaJwt.program.stop(),
        nginx.stop(),
        peer.program.stop(),
        peerJwt.program.stop(),
        bare.stop(),
      ]);
      await user.stop();
      await redis.stop();
    },
  };
}

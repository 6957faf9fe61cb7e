// The fronts of the gateway suite, started beside one user service and one redis-server, in the
// order a round measures them (rotated from round to round; each states what it is in its
// description): the user service itself (the ceiling), nginx, the sidecar as deployed with Redis,
// the Node peer, the bare proxy (the floor of any Node gateway), the sidecar in memory, and the
// Node peer and the sidecar keyed by a verified JWT (ES256 against the issuer's JWKS; iss, aud,
// typ at+jwt). The Redis sidecar sits between the two anchors of its throughput goals, nginx and
// the Node peer, and the jwt sidecar beside its Node peer, so that each goal's pair is measured back
// to back in all rounds but one. A jwt gateway is checked to do its job before it is measured.
// The jwt fronts' token material: an ES256 key pair made at start, its JWKS served from a small
// local HTTP server (the issuer's origin), and one access token per user (typ at+jwt, iss, aud,
// sub = the user, exp an hour ahead, kid in the header), as an authorization server hands them out.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Program, startUserService } from '../test/harness/programs.ts';
import { startRedis } from '../test/harness/redis.ts';
import { startBareProxy, startBenchSidecar, startPeer, unreachable } from './lib/fronts.ts';
import { startNginx } from './peers/nginx.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const AUDIENCE = 'bench-service';
const BARE_PROXY =
  "node:http + undici Pool, no limiter, bundled and run with the sidecar's heap caps (floor of a Node proxy)";

export interface Target {
  readonly name: string;
  readonly description: string;
  readonly base: string;
  /** The per-user header lines the load generators send in turn (USER-ID or a bearer token). */
  readonly headerFile: string;
  /** Processes whose CPU counts as the front's (the gateway itself; the upstream for direct). */
  readonly cpuPids: () => (number | undefined)[];
  /** Processes whose memory counts as the front's (nginx: its master and its worker). */
  readonly rssPids: () => (number | undefined)[];
}

/** Refuses to measure a jwt gateway that does not do the job: 401 without or with a forged token, 200 with a real one. */
async function checkJwtGateway({ name, base }: Target, token: string): Promise<void> {
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

/** The fronts, the issuer of the `users`' tokens, and the header lines of the users in turn. */
export async function startGatewayFronts(users: string[]) {
  const issuer = await startJwtIssuer(users);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'portcullis-bench-gateway-'));
  const [userIdFile, bearerFile] = [path.join(dir, 'user-id.txt'), path.join(dir, 'bearer.txt')];
  writeFileSync(userIdFile, `${users.map((u) => `USER-ID: ${u}`).join('\n')}\n`);
  writeFileSync(
    bearerFile,
    `${issuer.tokens.map((t) => `Authorization: Bearer ${t}`).join('\n')}\n`,
  );
  const redis = await startRedis();
  const user = await startUserService();
  const programs: Program[] = [];
  const target = (name: string, description: string, base: string, p: Program): Target => {
    const pid = () => [p.child.pid];
    const headerFile = name.endsWith('-jwt') ? bearerFile : userIdFile;
    return { name, description, base, headerFile, cpuPids: pid, rssPids: pid };
  };
  const jwtKey = {
    issuer: issuer.issuer,
    audience: AUDIENCE,
    jwksUrl: issuer.jwksUrl,
    claim: 'sub',
    algorithms: ['ES256' as const],
    cacheSize: 10_000,
  };
  type More = Parameters<typeof startBenchSidecar>[3];
  const sidecar = async (name: string, what: string, redisUrl?: string, more?: More) => {
    const s = await startBenchSidecar(user.url, redisUrl, `bench-${name}`, more);
    programs.push(s.program);
    return target(name, what, s.url, s.program);
  };
  const peer = async (name: string, what: string, extra: Record<string, string> = {}) => {
    const p = await startPeer('bench/peers/node-peer.ts', `bench-${name}`, {
      UPSTREAM_URL: user.url,
      REDIS_URL: redis.url,
      // node-peer.ts' defaults, set here all the same: the peer inherits this process's environment.
      MAX: String(unreachable.burstCapacity),
      WINDOW_MS: '1000',
      ...extra,
    });
    programs.push(p.program);
    return target(name, what, p.url, p.program);
  };
  const nginx = await startNginx(user.port);
  const bare = await startBareProxy(user.url, 'bench-bare-proxy');
  programs.push(bare.program);
  const targets: Target[] = [
    target('direct', 'user service directly (the ceiling)', user.url, user.program),
    {
      name: 'nginx',
      description: 'nginx 1.22 (Debian), proxy_pass + limit_req, 1 worker',
      base: nginx.url,
      headerFile: userIdFile,
      cpuPids: () => [nginx.workerPid()],
      rssPids: () => [nginx.pid, nginx.workerPid()],
    },
    await sidecar('sidecar-redis', 'Portcullis sidecar, Redis token bucket', redis.url),
    await peer('node-peer', 'fastify + @fastify/http-proxy + @fastify/rate-limit (Redis store)'),
    target('bare-proxy', BARE_PROXY, bare.url, bare.program),
    await sidecar('sidecar-memory', 'Portcullis sidecar, in-memory token bucket'),
    await peer(
      'node-peer-jwt',
      'the Node peer + @fastify/jwt with get-jwks (ES256, iss, aud, typ), fast-jwt cache 10,000, key sub',
      { JWT_JWKS_URL: issuer.jwksUrl, JWT_ISSUER: issuer.issuer, JWT_AUDIENCE: AUDIENCE },
    ),
    await sidecar(
      'sidecar-jwt',
      'Portcullis sidecar, Redis token bucket, key jwt (ES256, iss, aud, typ), cache 10,000, key sub',
      redis.url,
      { limiter: { ...unreachable, key: 'jwt', keyHeader: 'USER-ID', jwt: jwtKey } },
    ),
  ];
  for (const t of targets.filter((x) => x.headerFile === bearerFile))
    await checkJwtGateway(t, issuer.tokens[0] ?? '');
  return {
    targets,
    issuer,
    async stop() {
      await Promise.allSettled([nginx.stop(), ...programs.map((p) => p.stop())]);
      await user.program.stop();
      await redis.stop();
      await issuer.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const KID = 'bench-es256';
const TOKEN_TTL_S = 3600;

async function startJwtIssuer(users: readonly string[]) {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  const jwks = JSON.stringify({
    keys: [{ ...(await exportJWK(publicKey)), kid: KID, alg: 'ES256', use: 'sig' }],
  });
  let fetches = 0;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/jwks.json') {
      fetches++;
      const headers = {
        'content-type': 'application/jwk-set+json',
        'cache-control': 'max-age=300',
      };
      res.writeHead(200, headers).end(jwks);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  /** The issuer (iss), also the origin the JWKS is served from. */
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const iat = Math.floor(Date.now() / 1000);
  return {
    issuer,
    jwksUrl: `${issuer}/jwks.json`,
    /** The access token of each user, in the order of the users given. */
    tokens: await Promise.all(
      users.map((sub) =>
        new SignJWT({ client_id: 'bench-client', scope: 'profile' })
          .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: KID })
          .setIssuer(issuer)
          .setAudience(AUDIENCE)
          .setSubject(sub)
          .setIssuedAt(iat)
          .setExpirationTime(iat + TOKEN_TTL_S)
          .setJti(`${sub}-${iat}`)
          .sign(privateKey),
      ),
    ),
    /** GET requests the JWKS endpoint answered so far (each gateway should fetch once and cache). */
    jwksFetches: () => fetches,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

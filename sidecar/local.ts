// `make run` description of the sidecar (lib/local-program.ts): route `all`, `/**`, to the
// user service on 8081 with the specification's "Normal" limits unless the environment overrides
// them; REDIS_URL switches the limiter from memory to Redis; LIMIT_KEY=jwt keys the buckets on the
// verified subject of access tokens from the local auth server instead of the USER-ID header.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { LocalProgramFactory } from '../lib/local-program.ts';
import { parseSidecarConfig, type SidecarConfigInput } from '../lib/config/sidecar.ts';

const port = 8080;
const adminPort = 9090;

const intFromEnv = (env: NodeJS.ProcessEnv, name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`${name} must be a positive integer, got ${raw}`);
  return n;
};

/** The local auth server (services/auth-server/local.ts) and the user service's default audience. */
const LOCAL_ISSUER = 'http://localhost:9000';
const LOCAL_AUDIENCE = 'urn:portcullis:user-service';

const sidecar: LocalProgramFactory = (ctx) => {
  const redisUrl = ctx.env.REDIS_URL;
  const limitKey = ctx.env['LIMIT_KEY'] ?? 'header';
  if (limitKey !== 'header' && limitKey !== 'jwt')
    throw new Error(`LIMIT_KEY must be header or jwt, got ${limitKey}`);
  const input: SidecarConfigInput = {
    listen: { host: '127.0.0.1', port },
    admin: { host: '127.0.0.1', port: adminPort },
    upstream: { url: 'http://127.0.0.1:8081' },
    route: { id: 'all', path: '/**' },
    limiter: {
      replenishRate: intFromEnv(ctx.env, 'REPLENISH_RATE', 20),
      burstCapacity: intFromEnv(ctx.env, 'BURST_CAPACITY', 100),
      requestedTokens: intFromEnv(ctx.env, 'REQUESTED_TOKENS', 3),
      ...(limitKey === 'jwt'
        ? {
            key: 'jwt' as const,
            jwt: {
              issuer: LOCAL_ISSUER,
              audience: LOCAL_AUDIENCE,
              jwksUrl: `${LOCAL_ISSUER}/jwks.json`,
            },
          }
        : {}),
    },
    ...(redisUrl !== undefined && redisUrl !== '' ? { redis: { url: redisUrl } } : {}),
  };
  const config = parseSidecarConfig(input); // fail early, naming the field
  const file = path.join(ctx.workDir, 'sidecar.yaml');
  writeFileSync(file, stringify(input));
  const l = config.limiter;
  return {
    name: 'sidecar',
    entry: 'sidecar/main.ts',
    port,
    args: ['--config', file],
    notes: [
      `route all /** -> user-service, ${l.replenishRate}/s, burst ${l.burstCapacity}, ${l.requestedTokens ?? 1} per request, store ${config.redis === undefined ? 'memory' : 'redis'}, key ${l.key === 'jwt' ? 'sub of a verified access token' : 'USER-ID header'}`,
      l.key === 'jwt'
        ? `try: sign in at the demo client (http://localhost:3000); it calls /me here with its access token`
        : `try: curl -i -H 'USER-ID: alice' http://localhost:${port}/healthcheck/ready`,
      `admin: http://localhost:${adminPort}/metrics  /healthz  /readyz   (config ${file})`,
    ],
  };
};

export default sidecar;

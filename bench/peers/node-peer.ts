// The Node peer of the gateway benchmark: the usual way to build this gateway on Node, fastify with
// @fastify/http-proxy (undici underneath, keep-alive) and @fastify/rate-limit with its Redis store
// (a fixed-window INCR + PEXPIRE Lua script), keyed by the USER-ID header like the sidecar.
// Its ioredis runs with auto-pipelining on (the commands of one tick in one write, the nearest
// ioredis setting to the sidecar's batching), so the comparison is of the designs, not of client
// tuning. Configured by env: PORT, UPSTREAM_URL, REDIS_URL (unset =
// the plugin's in-memory store), MAX (requests per window), WINDOW_MS.
//
// With JWT_JWKS_URL set it does the sidecar's jwt key source instead: @fastify/jwt verifies the
// Authorization: Bearer access token against the JWKS the way its documentation shows (get-jwks
// fetches the key set and caches each key by kid), with the sidecar's checks (JWT_ISSUER,
// JWT_AUDIENCE, typ at+jwt, ES256 only, exp and sub required) and its verified-token cache size
// (fast-jwt's cache, 10,000 tokens); a missing or invalid token is a 401. The bucket is keyed by
// the verified sub, which is also sent upstream as USER-ID in place of whatever the client sent.
// JWT_PEM: `once` (default) turns each cached key into the PEM @fastify/jwt wants once (node:crypto);
// `per-request` is the documentation's recipe as written, get-jwks' getPublicKey on every request,
// which converts the cached key anew each time with jwk-to-pem (pure JavaScript, ~5 ms of CPU for
// an EC key on this machine), even when the token itself is answered from fast-jwt's cache.
import httpProxy from '@fastify/http-proxy';
import fastifyJwt, { type TokenOrHeader } from '@fastify/jwt';
import rateLimit from '@fastify/rate-limit';
import { createPublicKey } from 'node:crypto';
import Fastify, { type FastifyRequest } from 'fastify';
import buildGetJwks from 'get-jwks';
import { Redis } from 'ioredis';

const env = process.env;
const port = Number(env['PORT'] ?? 8090);
const upstream = env['UPSTREAM_URL'] ?? 'http://127.0.0.1:8081';
const redisUrl = env['REDIS_URL'];
const max = Number(env['MAX'] ?? 1_000_000_000);
const timeWindow = Number(env['WINDOW_MS'] ?? 1000);
const jwksUrl = env['JWT_JWKS_URL'];

const app = Fastify({ logger: false });
const redis =
  redisUrl === undefined
    ? undefined
    : new Redis(redisUrl, {
        enableAutoPipelining: true,
        maxRetriesPerRequest: 0,
        connectTimeout: 2000,
        commandTimeout: 1000,
      });

/** The sub claim of a verified token's payload (request.user); undefined before verification. */
function verifiedSub(user: unknown): string | undefined {
  return typeof user === 'object' && user !== null && 'sub' in user && typeof user.sub === 'string'
    ? user.sub
    : undefined;
}

if (jwksUrl !== undefined) {
  const jwks = new URL(jwksUrl);
  // The key is fetched from the configured JWKS URL, never from a location the token names.
  const getJwks = buildGetJwks({ jwksPath: jwks.pathname });
  const pemPerRequest = env['JWT_PEM'] === 'per-request';
  // One PEM per key object get-jwks holds: a key it fetches anew (after its ttl) is converted anew.
  const pems = new WeakMap<object, string>();
  const publicKey = async (_req: FastifyRequest, token: TokenOrHeader): Promise<string> => {
    const header = 'header' in token ? token.header : token;
    if (pemPerRequest)
      return getJwks.getPublicKey({ domain: jwks.origin, kid: header.kid, alg: header.alg });
    const jwk = await getJwks.getJwk({
      domain: jwks.origin,
      kid: header.kid ?? '',
      alg: header.alg,
    });
    let pem = pems.get(jwk);
    if (pem === undefined) {
      pem = createPublicKey({ key: jwk, format: 'jwk' })
        .export({ type: 'spki', format: 'pem' })
        .toString();
      pems.set(jwk, pem);
    }
    return pem;
  };
  await app.register(fastifyJwt, {
    decode: { complete: true },
    secret: publicKey,
    verify: {
      algorithms: ['ES256'],
      allowedIss: env['JWT_ISSUER'] ?? '',
      allowedAud: env['JWT_AUDIENCE'] ?? '',
      checkTyp: 'at+jwt',
      requiredClaims: ['exp', 'sub'],
      cache: 10_000,
    },
  });
  // Before the rate limiter's hook: app-level hooks run before the route-level ones it adds.
  app.addHook('onRequest', async (req) => {
    await req.jwtVerify();
  });
}

const userKey = (req: FastifyRequest): string => {
  if (jwksUrl !== undefined) return verifiedSub(req.user) ?? '';
  const v = req.headers['user-id'];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
};

await app.register(rateLimit, {
  global: true,
  max,
  timeWindow,
  ...(redis !== undefined ? { redis, nameSpace: 'peer-rl:' } : {}),
  keyGenerator: userKey,
});
await app.register(httpProxy, {
  upstream,
  prefix: '/',
  ...(jwksUrl !== undefined
    ? {
        replyOptions: {
          rewriteRequestHeaders: (req, headers) => ({
            ...headers,
            'user-id': verifiedSub(req.user) ?? '',
          }),
        },
      }
    : {}),
});

const shutdown = () => {
  void app.close().then(() => {
    redis?.disconnect();
    process.exit(0);
  });
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
await app.listen({ port, host: '127.0.0.1' });
console.log(
  JSON.stringify({
    msg: 'node peer listening',
    port,
    upstream,
    store: redis === undefined ? 'memory' : 'redis',
    key: jwksUrl === undefined ? 'header' : `jwt (pem ${env['JWT_PEM'] ?? 'once'})`,
  }),
);

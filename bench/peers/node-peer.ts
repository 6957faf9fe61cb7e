// The Node peer of the gateway benchmark: the usual way to build this gateway on Node, fastify with
// @fastify/http-proxy (undici, keep-alive) and @fastify/rate-limit with its Redis store (a
// fixed-window INCR + PEXPIRE script; ioredis auto-pipelining on, the nearest setting to the
// sidecar's batching, so designs are compared, not client tuning), keyed by the USER-ID header like
// the sidecar. Env: PORT, UPSTREAM_URL, REDIS_URL, MAX (requests per window), WINDOW_MS.
// With JWT_JWKS_URL set it keys by a verified access token's sub instead, like the sidecar's jwt
// key: @fastify/jwt with get-jwks (caching each key by kid) and the sidecar's checks (JWT_ISSUER,
// JWT_AUDIENCE, typ at+jwt, ES256 only, exp and sub required) and token cache (fast-jwt's, 10,000);
// a missing or invalid token is a 401, and the sub goes upstream as USER-ID. Each key becomes the
// PEM @fastify/jwt wants once: the documentation's recipe (get-jwks' getPublicKey per request)
// converts it anew each time with jwk-to-pem, ~5 ms of CPU, even for a token fast-jwt has cached.
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
const max = Number(env['MAX'] ?? 1_000_000_000);
const timeWindow = Number(env['WINDOW_MS'] ?? 1000);
const jwksUrl = env['JWT_JWKS_URL'];

const app = Fastify({ logger: false });
const redis = new Redis(env['REDIS_URL'] ?? 'redis://127.0.0.1:6379', {
  enableAutoPipelining: true,
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  commandTimeout: 1000,
});

/** The sub claim of a verified token's payload (request.user; the verification requires it). */
const verifiedSub = (req: { user?: unknown }) =>
  (req.user as { sub?: string } | undefined)?.sub ?? '';

if (jwksUrl !== undefined) {
  const jwks = new URL(jwksUrl);
  // The key is fetched from the configured JWKS URL, never from a location the token names.
  const getJwks = buildGetJwks({ jwksPath: jwks.pathname });
  // One PEM per key object get-jwks holds: a key it fetches anew (after its ttl) is converted anew.
  const pems = new WeakMap<object, string>();
  const publicKey = async (_req: FastifyRequest, token: TokenOrHeader): Promise<string> => {
    const header = 'header' in token ? token.header : token;
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
  if (jwksUrl !== undefined) return verifiedSub(req);
  const v = req.headers['user-id'];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
};

await app.register(rateLimit, {
  global: true,
  max,
  timeWindow,
  redis,
  nameSpace: 'peer-rl:',
  keyGenerator: userKey,
});
await app.register(httpProxy, {
  upstream,
  prefix: '/',
  ...(jwksUrl !== undefined
    ? {
        replyOptions: {
          rewriteRequestHeaders: (req, headers) => ({ ...headers, 'user-id': verifiedSub(req) }),
        },
      }
    : {}),
});

const shutdown = () => {
  void app.close().then(() => {
    redis.disconnect();
    process.exit(0);
  });
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
await app.listen({ port, host: '127.0.0.1' });
const key = jwksUrl === undefined ? 'header' : 'jwt';
console.log(JSON.stringify({ msg: 'node peer listening', port, upstream, key }));

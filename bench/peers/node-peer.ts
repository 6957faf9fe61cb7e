// The Node peer of the gateway benchmark: the usual way to build this gateway on Node, fastify with
// @fastify/http-proxy (undici underneath, keep-alive) and @fastify/rate-limit with its Redis store
// (a fixed-window INCR + PEXPIRE Lua script), keyed by the USER-ID header like the sidecar.
// Given the same ioredis settings as the sidecar's store (auto-pipelining on), so the comparison is
// of the designs, not of client tuning. Configured by env: PORT, UPSTREAM_URL, REDIS_URL (unset =
// the plugin's in-memory store), MAX (requests per window), WINDOW_MS.
import httpProxy from '@fastify/http-proxy';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { Redis } from 'ioredis';

const env = process.env;
const port = Number(env['PORT'] ?? 8090);
const upstream = env['UPSTREAM_URL'] ?? 'http://127.0.0.1:8081';
const redisUrl = env['REDIS_URL'];
const max = Number(env['MAX'] ?? 1_000_000_000);
const timeWindow = Number(env['WINDOW_MS'] ?? 1000);

const app = Fastify({ logger: false });
const redis = redisUrl === undefined ? undefined : new Redis(redisUrl, { enableAutoPipelining: true, maxRetriesPerRequest: 0, connectTimeout: 2000, commandTimeout: 1000 });
await app.register(rateLimit, {
  global: true,
  max,
  timeWindow,
  ...(redis !== undefined ? { redis, nameSpace: 'peer-rl:' } : {}),
  keyGenerator: (req) => {
    const v = req.headers['user-id'];
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  },
});
await app.register(httpProxy, { upstream, prefix: '/' });

const shutdown = () => {
  void app.close().then(() => {
    redis?.disconnect();
    process.exit(0);
  });
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
await app.listen({ port, host: '127.0.0.1' });
console.log(JSON.stringify({ msg: 'node peer listening', port, upstream, store: redis === undefined ? 'memory' : 'redis' }));

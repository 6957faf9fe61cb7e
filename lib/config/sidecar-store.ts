// The bucket store sections of the sidecar's config (lib/config/sidecar.ts): redis (a shared store:
// one node, Sentinel or Cluster) or else memory (one process, bounded), and overload: how many
// decisions may wait on the store before the sidecar sheds requests itself.
import { z } from 'zod';

const port = z.number().int().min(0).max(65535);
const hostPort = z.strictObject({ host: z.string().min(1), port: port.min(1) });

/** A redis:// or rediss:// URL (also what a `redis.urlFile` must hold). */
export const REDIS_URL = /^rediss?:\/\//;

export const redisSchema = z
  .strictObject({
    url: z
      .string()
      .regex(REDIS_URL, 'a redis:// or rediss:// URL')
      .optional()
      .describe('Single Redis node'),
    urlFile: z
      .string()
      .min(1)
      .optional()
      .describe(
        'File holding the URL of a single Redis node (a mounted Secret key); read at start and again whenever it changes',
      ),
    sentinel: z
      .strictObject({
        name: z.string().min(1).describe('Master set name'),
        sentinels: z.array(hostPort).min(1).describe('Sentinel addresses'),
      })
      .optional()
      .describe('Redis Sentinel'),
    cluster: z
      .strictObject({ nodes: z.array(hostPort).min(1).describe('Seed nodes') })
      .optional()
      .describe('Redis Cluster'),
    passwordFile: z
      .string()
      .min(1)
      .optional()
      .describe('File holding the Redis password (a mounted Secret)'),
    keyPrefix: z.string().default('portcullis:bucket:').describe('Prefix of every bucket key'),
    hashKeys: z
      .boolean()
      .default(false)
      .describe(
        'Bucket keys hold an HMAC of the route, rule and client key (keyed with the Redis password) instead of the client key itself, so Redis holds no user id or API key; a new password starts every bucket afresh',
      ),
    commandTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(50)
      .describe(
        'Longest wait for Redis to answer one limiter decision (ms); then onStoreError. A reply that arrived in time is a decision even when the sidecar reads it late (a busy event loop)',
      ),
    connectTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(2000)
      .describe('Longest wait to connect (ms)'),
  })
  .refine((r) => r.url === undefined || r.urlFile === undefined, {
    message: 'url and urlFile are mutually exclusive: set one of them',
    path: ['urlFile'],
  })
  .refine(
    (r) => [r.url ?? r.urlFile, r.sentinel, r.cluster].filter((x) => x !== undefined).length === 1,
    {
      message: 'exactly one of url (or urlFile), sentinel or cluster',
    },
  )
  .describe(
    'Shared bucket store; without it the sidecar keeps buckets in memory (one process only)',
  );

/** Default bound of the memory store: with the estimate's 256-character keys ~40,000 buckets, well inside a 128 MiB heap. */
export const MEMORY_DEFAULTS = { maxBuckets: 100_000, maxBytes: 32 * 1024 * 1024 } as const;

export const memorySchema = z
  .strictObject({
    maxBuckets: z
      .number()
      .int()
      .nonnegative()
      .default(MEMORY_DEFAULTS.maxBuckets)
      .describe('Buckets held at most (0 = no bound)'),
    maxBytes: z
      .number()
      .int()
      .nonnegative()
      .default(MEMORY_DEFAULTS.maxBytes)
      .describe(
        'Estimated heap bytes of the buckets at most (240 + 2 per key character each; 0 = no bound)',
      ),
  })
  .describe(
    'Bound of the in-memory bucket store (no redis): at the bound, buckets that have refilled to full are forgotten; when none has, a request that would add a bucket is refused with 429 rather than admitted unmetered. Read at start (a change needs a restart)',
  );

export const overloadSchema = z
  .strictObject({
    maxPendingTakes: z
      .number()
      .int()
      .nonnegative()
      .default(4096)
      .describe(
        'Limiter decisions awaited at once at most (0 = no bound); past it a request is shed: 503 problem+json with Retry-After, counted as outcome overloaded',
      ),
    maxEventLoopLagMs: z
      .number()
      .int()
      .nonnegative()
      .default(1000)
      .describe(
        'Event-loop lag at most (ms, 0 = no bound), sampled while decisions are awaited; past it requests are shed as with maxPendingTakes. A busy sidecar sheds; it never counts as a store outage',
      ),
  })
  .describe(
    'When the sidecar itself is overloaded: requests it sheds explicitly instead of forwarding them undecided',
  );

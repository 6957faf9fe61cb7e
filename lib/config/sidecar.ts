// The sidecar's config file (YAML or JSON) as a zod schema: the single source of its shape. The
// operator renders this into a ConfigMap; the sidecar validates it at start and on every reload.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { limiterSchema, pathPattern } from './sidecar-limiter.ts';

export * from './sidecar-limiter.ts';

const port = z.number().int().min(0).max(65535);
const hostPort = z.strictObject({ host: z.string().min(1), port: port.min(1) });

export const listenSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0').describe('Address the proxy binds'),
    port: port.default(8080).describe('Port the proxy listens on (the Service port)'),
    headersTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe('Longest time a client may take to send the request headers (ms); then 408 and the connection is closed (slow-client defence)'),
    requestTimeoutMs: z
      .number()
      .int()
      .nonnegative()
      .default(60_000)
      .describe(
        'Longest pause while a request body arrives (ms; 0 = none): a client that declares a body and stops sending it gets 408 problem+json ' +
          '(or a close when a response already started). An idle timeout, not a total one, so long streaming uploads still work as long as bytes keep coming',
      ),
    requestBodyMinBytesPerSecond: z
      .number()
      .int()
      .nonnegative()
      .default(1)
      .describe(
        'Least average rate of a request body over each requestTimeoutMs (bytes/s; 0 = any rate): a body trickling slower is cut like an idle one, so it cannot hold an upstream connection with a byte now and then',
      ),
  })
  .describe('Where the proxy listens');

export const adminSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0').describe('Address the admin server binds'),
    port: port.default(9090).describe('Port of /healthz, /readyz and /metrics'),
  })
  .describe('Admin endpoints (health and Prometheus metrics)');

export const upstreamSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      // zod runs this check even when the url check above failed: parse defensively, so that a
      // malformed URL is reported with its field path instead of escaping as a bare TypeError.
      .refine((u) => { const p = URL.parse(u); return p === null || ((p.pathname === '/' || p.pathname === '') && p.search === '' && p.hash === ''); }, 'an origin only: scheme, host and port, no path or query')
      .describe('Origin of the service the route forwards to, e.g. http://127.0.0.1:8081'),
    connectTimeoutMs: z.number().int().positive().default(2000).describe('Longest wait to connect to the upstream (ms); then 504'),
    timeoutMs: z.number().int().positive().default(30_000).describe('Longest wait for the upstream response headers (ms); then 504'),
    bodyTimeoutMs: z.number().int().nonnegative().default(30_000).describe('Longest pause between upstream body chunks (ms; 0 = none)'),
    connections: z.number().int().positive().default(128).describe('Keep-alive connections to the upstream at most'),
  })
  .describe('The service behind the sidecar');

export const routeSchema = z
  .strictObject({
    id: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'letters, digits, dot, dash, underscore; at most 63')
      .describe('Route id; part of every bucket key, so two routes never share a bucket'),
    path: pathPattern
      .default('/**')
      .describe('Ant-style path pattern: `?` one character, `*` within a segment, `**` any number of segments; matched against the canonical request path'),
    mergeSlashes: z
      .boolean()
      .default(true)
      .describe('Merge runs of / in the request path into one before matching, and forward the merged path; false keeps them (for an upstream that tells /a//b from /a/b) but still refuses a path starting with //'),
    caseInsensitivePaths: z
      .boolean()
      .default(false)
      .describe('Match the route and rule path patterns without regard to letter case, for an upstream whose routing ignores case; the path is forwarded as sent'),
  })
  .describe('The single route this sidecar serves');

/** A redis:// or rediss:// URL (also what a `redis.urlFile` must hold). */
export const REDIS_URL = /^rediss?:\/\//;

export const redisSchema = z
  .strictObject({
    url: z.string().regex(REDIS_URL, 'a redis:// or rediss:// URL').optional().describe('Single Redis node'),
    urlFile: z
      .string()
      .min(1)
      .optional()
      .describe('File holding the URL of a single Redis node (a mounted Secret key); read at start and again whenever it changes'),
    sentinel: z
      .strictObject({
        name: z.string().min(1).describe('Master set name'),
        sentinels: z.array(hostPort).min(1).describe('Sentinel addresses'),
      })
      .optional()
      .describe('Redis Sentinel'),
    cluster: z.strictObject({ nodes: z.array(hostPort).min(1).describe('Seed nodes') }).optional().describe('Redis Cluster'),
    passwordFile: z.string().min(1).optional().describe('File holding the Redis password (a mounted Secret)'),
    keyPrefix: z.string().default('portcullis:bucket:').describe('Prefix of every bucket key'),
    hashKeys: z
      .boolean()
      .default(false)
      .describe("Bucket keys hold an HMAC of the route, rule and client key (keyed with the Redis password) instead of the client key itself, so Redis holds no user id or API key; a new password starts every bucket afresh"),
    commandTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(50)
      .describe('Longest wait for Redis to answer one limiter decision (ms); then onStoreError. A reply that arrived in time is a decision even when the sidecar reads it late (a busy event loop)'),
    connectTimeoutMs: z.number().int().positive().default(2000).describe('Longest wait to connect (ms)'),
  })
  .refine((r) => r.url === undefined || r.urlFile === undefined, {
    message: 'url and urlFile are mutually exclusive: set one of them',
    path: ['urlFile'],
  })
  .refine((r) => [r.url ?? r.urlFile, r.sentinel, r.cluster].filter((x) => x !== undefined).length === 1, {
    message: 'exactly one of url (or urlFile), sentinel or cluster',
  })
  .describe('Shared bucket store; without it the sidecar keeps buckets in memory (one process only)');

/** Default bound of the memory store: with the estimate's 256-character keys ~40,000 buckets, well inside a 128 MiB heap. */
export const MEMORY_DEFAULTS = { maxBuckets: 100_000, maxBytes: 32 * 1024 * 1024 } as const;

export const memorySchema = z
  .strictObject({
    maxBuckets: z.number().int().nonnegative().default(MEMORY_DEFAULTS.maxBuckets).describe('Buckets held at most (0 = no bound)'),
    maxBytes: z
      .number()
      .int()
      .nonnegative()
      .default(MEMORY_DEFAULTS.maxBytes)
      .describe('Estimated heap bytes of the buckets at most (240 + 2 per key character each; 0 = no bound)'),
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
      .describe('Limiter decisions awaited at once at most (0 = no bound); past it a request is shed: 503 problem+json with Retry-After, counted as outcome overloaded'),
    maxEventLoopLagMs: z
      .number()
      .int()
      .nonnegative()
      .default(1000)
      .describe('Event-loop lag at most (ms, 0 = no bound), sampled while decisions are awaited; past it requests are shed as with maxPendingTakes. A busy sidecar sheds; it never counts as a store outage'),
  })
  .describe('When the sidecar itself is overloaded: requests it sheds explicitly instead of forwarding them undecided');

/** An IPv4 or IPv6 address or CIDR block, e.g. 10.0.0.0/8 or ::1. */
const addressOrCidr = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()], { error: 'an IP address or CIDR block such as 10.0.0.0/8' });

export const decisionSchema = z
  .strictObject({
    grpc: z
      .strictObject({
        host: z.string().min(1).default('0.0.0.0').describe('Address the gRPC listener binds'),
        port: port.min(1).default(9191).describe('Port of envoy.service.auth.v3.Authorization/Check'),
      })
      .optional()
      .describe("gRPC ext_authz listener (Envoy's ext_authz grpc_service); none when omitted"),
    pathPrefix: z
      .string()
      .regex(/^(\/[^/?#]+)*$/, 'empty, or a path such as /authz (no trailing slash)')
      .default('')
      .describe("HTTP ext_authz: the path_prefix Envoy puts before the original path; removed before the route and rules see it"),
    trustedProxies: z
      .array(addressOrCidr)
      .max(64)
      .default([])
      .describe(
        'Forward-auth: peers (addresses or CIDR blocks) whose X-Forwarded-Method/X-Forwarded-Uri or X-Original-Method/X-Original-URI name the request to decide on. ' +
          'From any other peer those headers are ignored and the check request itself is decided on (the HTTP ext_authz form)',
      ),
  })
  .describe('Decision-service mode (mode: decision): how gateways ask');

export const sidecarConfigSchema = z
  .strictObject({
    mode: z
      .enum(['proxy', 'decision'])
      .default('proxy')
      .describe('proxy: forward admitted requests to upstream; decision: answer gateways (ext_authz HTTP and gRPC, forward-auth) on listen without proxying'),
    listen: listenSchema.default({ host: '0.0.0.0', port: 8080, headersTimeoutMs: 60_000, requestTimeoutMs: 60_000, requestBodyMinBytesPerSecond: 1 }),
    admin: adminSchema.default({ host: '0.0.0.0', port: 9090 }),
    upstream: upstreamSchema.optional(),
    decision: decisionSchema.default({ pathPrefix: '', trustedProxies: [] }),
    route: routeSchema,
    limiter: limiterSchema,
    redis: redisSchema.optional(),
    memory: memorySchema.default(MEMORY_DEFAULTS),
    overload: overloadSchema.default({ maxPendingTakes: 4096, maxEventLoopLagMs: 1000 }),
    shutdownGraceMs: z.number().int().nonnegative().default(10_000).describe('Longest wait for in-flight requests on shutdown (ms)'),
    shutdownKeepAliveMs: z
      .number()
      .int()
      .nonnegative()
      .default(1000)
      .describe('On shutdown, how long idle keep-alive connections stay open (ms), answering with Connection: close, before they are closed; part of shutdownGraceMs'),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .refine((c) => c.mode === 'decision' || c.upstream !== undefined, { message: 'upstream is required in proxy mode', path: ['upstream'] })
  .describe('Portcullis sidecar configuration');

/** The file as written (defaults optional). */
export type SidecarConfigInput = z.input<typeof sidecarConfigSchema>;
/** The validated config with defaults applied. */
export type SidecarConfig = z.infer<typeof sidecarConfigSchema>;
export type RedisConfig = NonNullable<SidecarConfig['redis']>;
export type UpstreamConfig = z.infer<typeof upstreamSchema>;

/** The upstream of a proxy-mode config (the schema requires it there). */
export function proxyUpstream(config: SidecarConfig): UpstreamConfig {
  if (config.upstream === undefined) throw new ConfigError('invalid sidecar config: upstream: upstream is required in proxy mode');
  return config.upstream;
}

/** Invalid config; the message names every bad field by its full path. */
export class ConfigError extends Error {
  readonly code = 'ERR_SIDECAR_CONFIG';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function parseSidecarConfig(value: unknown): SidecarConfig {
  const result = sidecarConfigSchema.safeParse(value);
  if (!result.success) {
    const detail = result.error.issues
      .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`)
      .join('; ');
    throw new ConfigError(`invalid sidecar config: ${detail}`);
  }
  return result.data;
}

/** Parses YAML or JSON text (JSON is YAML). */
export function parseSidecarConfigText(text: string): SidecarConfig {
  let value: unknown;
  try {
    value = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`invalid sidecar config: not YAML or JSON: ${(err as Error).message}`);
  }
  return parseSidecarConfig(value);
}

export function loadSidecarConfigFile(file: string): SidecarConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read sidecar config ${file}: ${(err as Error).message}`);
  }
  return parseSidecarConfigText(text);
}

// The sidecar's config file (YAML or JSON) as a zod schema: the single source of its shape. The
// operator renders this into a ConfigMap; the sidecar validates it at start and on every reload.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { MAX_BURST_CAPACITY } from '../token-bucket/bucket.ts';
import { patternProblem } from '../web/canonical-target.ts';

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

/** A path pattern, written in the canonical form requests are matched in (lib/web/canonical-target.ts). */
const pathPattern = z
  .string()
  .startsWith('/')
  .superRefine((pattern, ctx) => {
    const problem = pattern.startsWith('/') ? patternProblem(pattern) : undefined;
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

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

export const headerSetsSchema = z
  .strictObject({
    fields: z.boolean().optional().describe('RateLimit-Limit, -Remaining, -Reset and -Used, one header each (the form most clients read); true when omitted'),
    spec: z.boolean().optional().describe('Deprecated: the former name of fields'),
    draft: z.boolean().default(true).describe('IETF httpapi draft-10 RateLimit-Policy and RateLimit structured fields'),
    spring: z.boolean().default(false).describe('Spring Cloud Gateway X-RateLimit-* headers'),
  })
  .refine((h) => h.fields === undefined || h.spec === undefined, { message: 'spec is the former name of fields: set fields only', path: ['spec'] })
  // The old name still works; `renamedFrom` lets the sidecar log that it should be changed.
  .transform(({ fields, spec, ...sets }) => ({ fields: fields ?? spec ?? true, ...sets, ...(spec !== undefined ? { renamedFrom: 'spec' as const } : {}) }))
  .describe('Rate-limit header sets sent on responses');

/** Deprecated option names `config` uses, each with the message its log line gives (empty when none). */
export function deprecatedOptions(config: { limiter: { headers: { renamedFrom?: 'spec' } } }): string[] {
  return config.limiter.headers.renamedFrom === 'spec' ? ['limiter.headers.spec is deprecated: rename it to limiter.headers.fields (same meaning)'] : [];
}

/** Most token buckets one rule may carry (every one is read and written in the same atomic call). */
export const MAX_LIMITS_PER_RULE = 4;
/** Most rules one route may hold (each request walks them in order until one matches). */
export const MAX_RULES = 32;

const requestRule = (l: { requestedTokens: number; burstCapacity: number }) => l.requestedTokens <= l.burstCapacity;
const REQUESTED_TOKENS_MESSAGE = 'requestedTokens must not exceed burstCapacity';

export const limitSchema = z
  .strictObject({
    replenishRate: z.number().int().min(1).describe('Tokens restored to the bucket per second'),
    burstCapacity: z.number().int().min(1).max(MAX_BURST_CAPACITY).describe('Maximum number of tokens a bucket holds'),
    requestedTokens: z.number().int().min(1).default(1).describe('Tokens each request consumes'),
  })
  .refine(requestRule, { message: REQUESTED_TOKENS_MESSAGE, path: ['requestedTokens'] })
  .describe('One token bucket');

const ruleName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'lower-case letters, digits and dashes, starting and ending with a letter or digit')
  .max(63);

export const ruleSchema = z
  .strictObject({
    name: ruleName.describe('Rule name; part of its bucket keys, so a rule keeps its buckets across reloads as long as its name stays'),
    path: pathPattern
      .default('/**')
      .describe('Ant-style path pattern the rule applies to (`?` one character, `*` within a segment, `**` any number of segments), matched against the canonical request path'),
    methods: z
      .array(z.string().regex(/^[A-Z]+$/, 'an upper-case HTTP method such as GET'))
      .min(1)
      .optional()
      .describe('HTTP methods the rule applies to; every method when omitted'),
    limits: z
      .array(limitSchema)
      .min(1)
      .max(MAX_LIMITS_PER_RULE)
      .describe('Token buckets of the rule: a request is admitted only when every one holds its tokens, and then every one is charged'),
    enforce: z.boolean().optional().describe('false: decide, count and add the headers, but never refuse (shadow mode); the limiter\'s enforce when omitted'),
  })
  .describe('Limits for the requests one path pattern (and optionally methods) matches');

export const jwtKeySchema = z
  .strictObject({
    issuer: z.string().min(1).describe('Expected iss claim of the access tokens'),
    audience: z.string().min(1).describe('Expected aud claim (the service behind the sidecar)'),
    jwksUrl: z.url({ protocol: /^https?$/ }).describe('Where the issuer publishes its public keys (JWKS)'),
    claim: z.string().min(1).default('sub').describe('Claim whose value is the bucket key (a string)'),
    algorithms: z
      .array(z.enum(['ES256', 'ES384', 'ES512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'EdDSA']))
      .min(1)
      .default(['ES256', 'RS256'])
      .describe('Signature algorithms accepted (asymmetric only)'),
    cacheSize: z.number().int().min(0).default(10_000).describe('Verified tokens remembered (until their exp) so a repeat costs a lookup; 0 turns the cache off'),
    jwksCooldownMs: z
      .number()
      .int()
      .nonnegative()
      .default(30_000)
      .describe('Least time between two JWKS fetches triggered by an unknown key id (ms)'),
    jwksTimeoutMs: z.number().int().positive().default(2000).describe('Longest wait for the JWKS (ms); then 503'),
    jwksAllowedHosts: z
      .array(z.string().min(1).max(253))
      .max(64)
      .optional()
      .describe("Host names jwksUrl may point at (the platform's list of key publishers); unset: any. The sidecar fetches nothing else, so a route cannot aim its fetches at an internal address"),
  })
  .refine((j) => j.jwksAllowedHosts === undefined || jwksHostAllowed(j.jwksUrl, j.jwksAllowedHosts), {
    message: 'the host of jwksUrl is not in jwksAllowedHosts',
    path: ['jwksUrl'],
  })
  .describe('Verification of the Authorization: Bearer access token when the key source is jwt');

/** Whether the URL's host name (no port; case-insensitive) is one of `hosts`. */
function jwksHostAllowed(url: string, hosts: readonly string[]): boolean {
  const host = new URL(url).hostname.toLowerCase();
  return hosts.some((h) => h.toLowerCase() === host);
}

export const limiterSchema = z
  .strictObject({
    replenishRate: z.number().int().min(1).optional().describe('Single-limit form: tokens restored to the bucket per second (one rule for /**)'),
    burstCapacity: z.number().int().min(1).max(MAX_BURST_CAPACITY).optional().describe('Single-limit form: maximum number of tokens a bucket holds'),
    requestedTokens: z.number().int().min(1).optional().describe('Single-limit form: tokens each request consumes (default 1)'),
    rules: z
      .array(ruleSchema)
      .min(1)
      .max(MAX_RULES)
      .optional()
      .describe('Ordered rules: the first whose path and method match a request decides its limits'),
    unmatched: z
      .enum(['forward', 'refuse'])
      .default('forward')
      .describe('A request that no rule matches: forward it unlimited, or refuse it (404 problem+json)'),
    enforce: z.boolean().default(true).describe('false: decide, count and add headers, but never refuse (shadow mode), for rules that do not say'),
    key: z
      .enum(['header', 'jwt'])
      .default('header')
      .describe('Where the bucket key comes from: the keyHeader as sent, or a claim of a verified access token'),
    keyHeader: z
      .string()
      .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'an HTTP header name')
      .default('USER-ID')
      .describe('header key: the request header whose first value is the bucket key; jwt key: the header set to the verified claim on the forwarded request (whatever the client sent is dropped)'),
    jwt: jwtKeySchema.optional(),
    onMissingKey: z
      .strictObject({
        status: z.number().int().min(400).max(499).default(400).describe('Status of the problem+json answer when the key header is missing or invalid'),
      })
      .default({ status: 400 })
      .describe('Answer when the key header is missing, empty, over 256 bytes or has control characters (header key)'),
    maxInFlightPerKey: z
      .number()
      .int()
      .nonnegative()
      .default(32)
      .describe(
        'Requests with a body still arriving one key may have at once (0 = no bound), and at most a quarter of upstream.connections: past it a request with a body is refused before it is charged (429 problem+json, Retry-After: 1), so slow uploads of one key cannot hold every upstream connection. Bodiless requests are not counted',
      ),
    onStoreError: z
      .enum(['allow', 'deny'])
      .default('allow')
      .describe('When the store is down or slow: allow (fail open) or deny (503 problem+json)'),
    headers: headerSetsSchema.default({ fields: true, draft: true, spring: false }),
  })
  .refine((l) => (l.rules === undefined) !== (l.replenishRate === undefined && l.burstCapacity === undefined && l.requestedTokens === undefined), {
    message: 'set either rules or the single-limit form (replenishRate, burstCapacity, requestedTokens), not both',
  })
  .refine((l) => l.rules !== undefined || (l.replenishRate !== undefined && l.burstCapacity !== undefined), {
    message: 'the single-limit form needs replenishRate and burstCapacity',
    path: ['burstCapacity'],
  })
  .refine((l) => l.burstCapacity === undefined || requestRule({ requestedTokens: l.requestedTokens ?? 1, burstCapacity: l.burstCapacity }), {
    message: REQUESTED_TOKENS_MESSAGE,
    path: ['requestedTokens'],
  })
  .refine((l) => l.rules === undefined || new Set(l.rules.map((r) => r.name)).size === l.rules.length, { message: 'rule names must be unique', path: ['rules'] })
  .refine((l) => (l.key === 'jwt') === (l.jwt !== undefined), { message: 'jwt settings are required with key jwt, and only then', path: ['jwt'] })
  .describe('Token-bucket limiter of the route (replenish rate, burst capacity and requested tokens per request, as in Spring Cloud Gateway\'s RequestRateLimiter)');

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
export type LimiterConfig = SidecarConfig['limiter'];
export type RuleConfig = z.infer<typeof ruleSchema>;
export type JwtKeyConfig = z.infer<typeof jwtKeySchema>;
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

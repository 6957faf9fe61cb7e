// The sidecar's config file (YAML or JSON) as a zod schema: the single source of its shape. The
// operator renders this into a ConfigMap; the sidecar validates it at start and on every reload.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { limiterSchema, pathPattern } from './sidecar-limiter.ts';
import { MEMORY_DEFAULTS, memorySchema, overloadSchema, redisSchema } from './sidecar-store.ts';

export * from './sidecar-limiter.ts';
export * from './sidecar-store.ts';

const port = z.number().int().min(0).max(65535);
export const listenSchema = z
  .strictObject({
    host: z.string().min(1).default('0.0.0.0').describe('Address the proxy binds'),
    port: port.default(8080).describe('Port the proxy listens on (the Service port)'),
    headersTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe(
        'Longest time a client may take to send the request headers (ms); then 408 and the connection is closed (slow-client defence)',
      ),
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
      .refine((u) => {
        const p = URL.parse(u);
        return (
          p === null ||
          ((p.pathname === '/' || p.pathname === '') && p.search === '' && p.hash === '')
        );
      }, 'an origin only: scheme, host and port, no path or query')
      .describe('Origin of the service the route forwards to, e.g. http://127.0.0.1:8081'),
    connectTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(2000)
      .describe('Longest wait to connect to the upstream (ms); then 504'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .default(30_000)
      .describe('Longest wait for the upstream response headers (ms); then 504'),
    bodyTimeoutMs: z
      .number()
      .int()
      .nonnegative()
      .default(30_000)
      .describe('Longest pause between upstream body chunks (ms; 0 = none)'),
    connections: z
      .number()
      .int()
      .positive()
      .default(128)
      .describe('Keep-alive connections to the upstream at most'),
  })
  .describe('The service behind the sidecar');

export const routeSchema = z
  .strictObject({
    id: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
        'letters, digits, dot, dash, underscore; at most 63',
      )
      .describe('Route id; part of every bucket key, so two routes never share a bucket'),
    path: pathPattern
      .default('/**')
      .describe(
        'Ant-style path pattern: `?` one character, `*` within a segment, `**` any number of segments; matched against the canonical request path',
      ),
    mergeSlashes: z
      .boolean()
      .default(true)
      .describe(
        'Merge runs of / in the request path into one before matching, and forward the merged path; false keeps them (for an upstream that tells /a//b from /a/b) but still refuses a path starting with //',
      ),
    caseInsensitivePaths: z
      .boolean()
      .default(false)
      .describe(
        'Match the route and rule path patterns without regard to letter case, for an upstream whose routing ignores case; the path is forwarded as sent',
      ),
  })
  .describe('The single route this sidecar serves');

/** An IPv4 or IPv6 address or CIDR block, e.g. 10.0.0.0/8 or ::1. */
const addressOrCidr = z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()], {
  error: 'an IP address or CIDR block such as 10.0.0.0/8',
});

export const decisionSchema = z
  .strictObject({
    grpc: z
      .strictObject({
        host: z.string().min(1).default('0.0.0.0').describe('Address the gRPC listener binds'),
        port: port
          .min(1)
          .default(9191)
          .describe('Port of envoy.service.auth.v3.Authorization/Check'),
      })
      .optional()
      .describe("gRPC ext_authz listener (Envoy's ext_authz grpc_service); none when omitted"),
    pathPrefix: z
      .string()
      .regex(/^(\/[^/?#]+)*$/, 'empty, or a path such as /authz (no trailing slash)')
      .default('')
      .describe(
        'HTTP ext_authz: the path_prefix Envoy puts before the original path; removed before the route and rules see it',
      ),
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
      .describe(
        'proxy: forward admitted requests to upstream; decision: answer gateways (ext_authz HTTP and gRPC, forward-auth) on listen without proxying',
      ),
    listen: listenSchema.default({
      host: '0.0.0.0',
      port: 8080,
      headersTimeoutMs: 60_000,
      requestTimeoutMs: 60_000,
      requestBodyMinBytesPerSecond: 1,
    }),
    admin: adminSchema.default({ host: '0.0.0.0', port: 9090 }),
    upstream: upstreamSchema.optional(),
    decision: decisionSchema.default({ pathPrefix: '', trustedProxies: [] }),
    route: routeSchema,
    limiter: limiterSchema,
    redis: redisSchema.optional(),
    memory: memorySchema.default(MEMORY_DEFAULTS),
    overload: overloadSchema.default({ maxPendingTakes: 4096, maxEventLoopLagMs: 1000 }),
    shutdownGraceMs: z
      .number()
      .int()
      .nonnegative()
      .default(10_000)
      .describe('Longest wait for in-flight requests on shutdown (ms)'),
    shutdownKeepAliveMs: z
      .number()
      .int()
      .nonnegative()
      .default(1000)
      .describe(
        'On shutdown, how long idle keep-alive connections stay open (ms), answering with Connection: close, before they are closed; part of shutdownGraceMs',
      ),
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
  })
  .refine((c) => c.mode === 'decision' || c.upstream !== undefined, {
    message: 'upstream is required in proxy mode',
    path: ['upstream'],
  })
  .describe('Portcullis sidecar configuration');

/** The file as written (defaults optional). */
export type SidecarConfigInput = z.input<typeof sidecarConfigSchema>;
/** The validated config with defaults applied. */
export type SidecarConfig = z.infer<typeof sidecarConfigSchema>;
export type RedisConfig = NonNullable<SidecarConfig['redis']>;
export type UpstreamConfig = z.infer<typeof upstreamSchema>;

/** The upstream of a proxy-mode config (the schema requires it there). */
export function proxyUpstream(config: SidecarConfig): UpstreamConfig {
  if (config.upstream === undefined)
    throw new ConfigError('invalid sidecar config: upstream: upstream is required in proxy mode');
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

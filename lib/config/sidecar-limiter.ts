// The limiter section of the sidecar's config (lib/config/sidecar.ts): the single-limit form or
// ordered rules of token buckets, the key source, and what the sidecar answers when it cannot
// decide. Its bounds, patterns and cross-field rules are those of lib/config/limiter.ts, which the
// RateLimitRoute CRD's spec.limiter (operator/api/limiter.ts) uses too.
import { z } from 'zod';
import { MAX_BURST_CAPACITY } from '../token-bucket/bucket.ts';
import { patternProblem } from '../web/canonical-target.ts';
import {
  DEFAULT_KEY_HEADER,
  HEADER_NAME_PATTERN,
  HEADER_NAME_PROBLEM,
  jwtSettingsRule,
  limiterFormRule,
  MAX_LIMITS_PER_RULE,
  MAX_RULES,
  MISSING_KEY_STATUS,
  ON_STORE_ERROR,
  refineParams,
  requestedTokensRule,
  RULE_NAME_MAX,
  RULE_NAME_PATTERN,
  RULE_NAME_PROBLEM,
  ruleNamesRule,
  singleLimitRule,
  UNMATCHED,
} from './limiter.ts';

export { MAX_LIMITS_PER_RULE, MAX_RULES };

/** A path pattern, written in the canonical form requests are matched in (lib/web/canonical-target.ts). */
export const pathPattern = z
  .string()
  .startsWith('/')
  .superRefine((pattern, ctx) => {
    const problem = pattern.startsWith('/') ? patternProblem(pattern) : undefined;
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

export const headerSetsSchema = z
  .strictObject({
    fields: z
      .boolean()
      .optional()
      .describe(
        'RateLimit-Limit, -Remaining, -Reset and -Used, one header each (the form most clients read); true when omitted',
      ),
    spec: z.boolean().optional().describe('Deprecated: the former name of fields'),
    draft: z
      .boolean()
      .default(true)
      .describe('IETF httpapi draft-10 RateLimit-Policy and RateLimit structured fields'),
    spring: z.boolean().default(false).describe('Spring Cloud Gateway X-RateLimit-* headers'),
  })
  .refine((h) => h.fields === undefined || h.spec === undefined, {
    message: 'spec is the former name of fields: set fields only',
    path: ['spec'],
  })
  // The old name still works; `renamedFrom` lets the sidecar log that it should be changed.
  .transform(({ fields, spec, ...sets }) => ({
    fields: fields ?? spec ?? true,
    ...sets,
    ...(spec !== undefined ? { renamedFrom: 'spec' as const } : {}),
  }))
  .describe('Rate-limit header sets sent on responses');

/** Deprecated option names `config` uses, each with the message its log line gives (empty when none). */
export function deprecatedOptions(config: {
  limiter: { headers: { renamedFrom?: 'spec' } };
}): string[] {
  return config.limiter.headers.renamedFrom === 'spec'
    ? ['limiter.headers.spec is deprecated: rename it to limiter.headers.fields (same meaning)']
    : [];
}

export const limitSchema = z
  .strictObject({
    replenishRate: z.number().int().min(1).describe('Tokens restored to the bucket per second'),
    burstCapacity: z
      .number()
      .int()
      .min(1)
      .max(MAX_BURST_CAPACITY)
      .describe('Maximum number of tokens a bucket holds'),
    requestedTokens: z.number().int().min(1).default(1).describe('Tokens each request consumes'),
  })
  .refine(requestedTokensRule.holds, refineParams(requestedTokensRule))
  .describe('One token bucket');

const ruleName = z.string().regex(RULE_NAME_PATTERN, RULE_NAME_PROBLEM).max(RULE_NAME_MAX);

export const ruleSchema = z
  .strictObject({
    name: ruleName.describe(
      'Rule name; part of its bucket keys, so a rule keeps its buckets across reloads as long as its name stays',
    ),
    path: pathPattern
      .default('/**')
      .describe(
        'Ant-style path pattern the rule applies to (`?` one character, `*` within a segment, `**` any number of segments), matched against the canonical request path',
      ),
    methods: z
      .array(z.string().regex(/^[A-Z]+$/, 'an upper-case HTTP method such as GET'))
      .min(1)
      .optional()
      .describe('HTTP methods the rule applies to; every method when omitted'),
    limits: z
      .array(limitSchema)
      .min(1)
      .max(MAX_LIMITS_PER_RULE)
      .describe(
        'Token buckets of the rule: a request is admitted only when every one holds its tokens, and then every one is charged',
      ),
    enforce: z
      .boolean()
      .optional()
      .describe(
        "false: decide, count and add the headers, but never refuse (shadow mode); the limiter's enforce when omitted",
      ),
  })
  .describe('Limits for the requests one path pattern (and optionally methods) matches');

export const jwtKeySchema = z
  .strictObject({
    issuer: z.string().min(1).describe('Expected iss claim of the access tokens'),
    audience: z.string().min(1).describe('Expected aud claim (the service behind the sidecar)'),
    jwksUrl: z
      .url({ protocol: /^https?$/ })
      .describe('Where the issuer publishes its public keys (JWKS)'),
    claim: z
      .string()
      .min(1)
      .default('sub')
      .describe('Claim whose value is the bucket key (a string)'),
    algorithms: z
      .array(
        z.enum([
          'ES256',
          'ES384',
          'ES512',
          'RS256',
          'RS384',
          'RS512',
          'PS256',
          'PS384',
          'PS512',
          'EdDSA',
        ]),
      )
      .min(1)
      .default(['ES256', 'RS256'])
      .describe('Signature algorithms accepted (asymmetric only)'),
    cacheSize: z
      .number()
      .int()
      .min(0)
      .default(10_000)
      .describe(
        'Verified tokens remembered (until their exp) so a repeat costs a lookup; 0 turns the cache off',
      ),
    jwksCooldownMs: z
      .number()
      .int()
      .nonnegative()
      .default(30_000)
      .describe('Least time between two JWKS fetches triggered by an unknown key id (ms)'),
    jwksTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(2000)
      .describe('Longest wait for the JWKS (ms); then 503'),
    jwksAllowedHosts: z
      .array(z.string().min(1).max(253))
      .max(64)
      .optional()
      .describe(
        "Host names jwksUrl may point at (the platform's list of key publishers); unset: any. The sidecar fetches nothing else, so a route cannot aim its fetches at an internal address",
      ),
  })
  .refine(
    (j) => j.jwksAllowedHosts === undefined || jwksHostAllowed(j.jwksUrl, j.jwksAllowedHosts),
    {
      message: 'the host of jwksUrl is not in jwksAllowedHosts',
      path: ['jwksUrl'],
    },
  )
  .describe('Verification of the Authorization: Bearer access token when the key source is jwt');

/** Whether the URL's host name (no port; case-insensitive) is one of `hosts`. */
function jwksHostAllowed(url: string, hosts: readonly string[]): boolean {
  const host = new URL(url).hostname.toLowerCase();
  return hosts.some((h) => h.toLowerCase() === host);
}

export const limiterSchema = z
  .strictObject({
    replenishRate: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Single-limit form: tokens restored to the bucket per second (one rule for /**)'),
    burstCapacity: z
      .number()
      .int()
      .min(1)
      .max(MAX_BURST_CAPACITY)
      .optional()
      .describe('Single-limit form: maximum number of tokens a bucket holds'),
    requestedTokens: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Single-limit form: tokens each request consumes (default 1)'),
    rules: z
      .array(ruleSchema)
      .min(1)
      .max(MAX_RULES)
      .refine(ruleNamesRule.holds, refineParams(ruleNamesRule))
      .optional()
      .describe(
        'Ordered rules: the first whose path and method match a request decides its limits',
      ),
    unmatched: z
      .enum(UNMATCHED)
      .default('forward')
      .describe(
        'A request that no rule matches: forward it unlimited, or refuse it (404 problem+json)',
      ),
    enforce: z
      .boolean()
      .default(true)
      .describe(
        'false: decide, count and add headers, but never refuse (shadow mode), for rules that do not say',
      ),
    key: z
      .enum(['header', 'jwt'])
      .default('header')
      .describe(
        'Where the bucket key comes from: the keyHeader as sent, or a claim of a verified access token',
      ),
    keyHeader: z
      .string()
      .regex(HEADER_NAME_PATTERN, HEADER_NAME_PROBLEM)
      .default(DEFAULT_KEY_HEADER)
      .describe(
        'header key: the request header whose first value is the bucket key; jwt key: the header set to the verified claim on the forwarded request (whatever the client sent is dropped)',
      ),
    jwt: jwtKeySchema.optional(),
    onMissingKey: z
      .strictObject({
        status: z
          .number()
          .int()
          .min(MISSING_KEY_STATUS.min)
          .max(MISSING_KEY_STATUS.max)
          .default(MISSING_KEY_STATUS.default)
          .describe('Status of the problem+json answer when the key header is missing or invalid'),
      })
      .default({ status: MISSING_KEY_STATUS.default })
      .describe(
        'Answer when the key header is missing, empty, over 256 bytes or has control characters (header key)',
      ),
    maxInFlightPerKey: z
      .number()
      .int()
      .nonnegative()
      .default(32)
      .describe(
        'Requests with a body still arriving one key may have at once (0 = no bound), and at most a quarter of upstream.connections: past it a request with a body is refused before it is charged (429 problem+json, Retry-After: 1), so slow uploads of one key cannot hold every upstream connection. Bodiless requests are not counted',
      ),
    onStoreError: z
      .enum(ON_STORE_ERROR)
      .default('allow')
      .describe('When the store is down or slow: allow (fail open) or deny (503 problem+json)'),
    headers: headerSetsSchema.default({ fields: true, draft: true, spring: false }),
  })
  .refine(limiterFormRule.holds, refineParams(limiterFormRule))
  .refine(singleLimitRule.holds, refineParams(singleLimitRule))
  .refine(requestedTokensRule.holds, refineParams(requestedTokensRule))
  .refine(jwtSettingsRule.holds, refineParams(jwtSettingsRule))
  .describe(
    "Token-bucket limiter of the route (replenish rate, burst capacity and requested tokens per request, as in Spring Cloud Gateway's RequestRateLimiter)",
  );

export type LimiterConfig = z.infer<typeof limiterSchema>;
export type RuleConfig = z.infer<typeof ruleSchema>;
export type JwtKeyConfig = z.infer<typeof jwtKeySchema>;

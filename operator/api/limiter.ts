// spec.limiter of a RateLimitRoute: either one token bucket for every request (the single-limit
// form) or ordered rules, each with a path, optional methods and up to four buckets; shadow mode
// (enforce: false); and where the bucket key comes from (a request header, or a claim of a
// verified access token). The operator renders it into the sidecar's limiter config
// (lib/config/sidecar-limiter.ts). Both take their bounds and cross-field rules from
// lib/config/limiter.ts, where each rule is written once with its message and its CEL twin: the
// zod refinement is the operator's check, the CEL rule the API server's.
import { z } from 'zod';
import {
  celValidation,
  DEFAULT_KEY_HEADER,
  HEADER_NAME_PATTERN,
  HEADER_NAME_PROBLEM,
  keyJwtFieldsRule,
  limiterFormRule,
  MAX_LIMITS_PER_RULE,
  MAX_RULES,
  methodsRule,
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
} from '../../lib/config/limiter.ts';

export { MAX_LIMITS_PER_RULE, MAX_RULES };
export const REQUESTED_TOKENS_RULE = requestedTokensRule.message;
export const LIMITER_FORM_RULE = limiterFormRule.message;
export const SINGLE_LIMIT_RULE = singleLimitRule.message;
export const RULE_NAMES_RULE = ruleNamesRule.message;
export const METHODS_RULE = methodsRule.message;
export const KEY_JWT_FIELDS_RULE = keyJwtFieldsRule.message;

export const HTTP_METHODS = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'CONNECT',
  'TRACE',
] as const;

const replenishRate = z.int().min(1).max(1_000_000);
const burstCapacity = z.int().min(1).max(10_000_000);
const requestedTokens = z.int().min(1).max(10_000_000);

export const limitSchema = z
  .strictObject({
    replenishRate: replenishRate.describe('Tokens restored to the bucket per second (>= 1).'),
    burstCapacity: burstCapacity.describe(
      'Maximum number of tokens the bucket holds (its size, >= 1).',
    ),
    requestedTokens: requestedTokens
      .optional()
      .describe('Tokens one request costs (>= 1, <= burstCapacity; 1 when omitted).'),
  })
  .refine(requestedTokensRule.holds, refineParams(requestedTokensRule))
  .meta({ 'x-kubernetes-validations': [celValidation(requestedTokensRule)] })
  .describe(
    'One token bucket per key, e.g. {replenishRate: 10, burstCapacity: 20} next to {replenishRate: 1, burstCapacity: 600} for a short and a long window.',
  );
export type Limit = z.infer<typeof limitSchema>;

export const ruleSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(RULE_NAME_MAX)
      .regex(RULE_NAME_PATTERN, RULE_NAME_PROBLEM)
      .describe(
        'Name of the rule, unique in the route. Part of its bucket keys: the sidecar keeps the buckets of a rule across config changes as long as its name stays.',
      ),
    path: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^\//, 'must start with /')
      .default('/**')
      .describe(
        'Ant-style path pattern the rule applies to, e.g. /api/orders/** (? one character, * within a segment, ** any number of segments).',
      ),
    methods: z
      .array(z.enum(HTTP_METHODS))
      .min(1)
      .max(HTTP_METHODS.length)
      .refine(methodsRule.holds, refineParams(methodsRule))
      .optional()
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe('HTTP methods the rule applies to, e.g. [POST, PUT]; every method when omitted.'),
    limits: z
      .array(limitSchema)
      .min(1)
      .max(MAX_LIMITS_PER_RULE)
      .describe(
        `Token buckets of the rule (1 to ${MAX_LIMITS_PER_RULE}): a request is admitted only when every one holds its tokens, and then every one is charged.`,
      ),
    enforce: z
      .boolean()
      .optional()
      .describe(
        'false: decide, count and send the rate-limit headers, but never refuse (shadow mode). The limiter enforce when omitted.',
      ),
  })
  .describe('Limits for the requests that match a path pattern (and, optionally, methods).');
export type Rule = z.infer<typeof ruleSchema>;

export const KEY_SOURCES = ['header', 'jwt'] as const;

export const limiterKeySchema = z
  .strictObject({
    source: z
      .enum(KEY_SOURCES)
      .default('header')
      .describe(
        'header: the first value of keyHeader as the client sent it. jwt: a claim of the Authorization: Bearer access token, verified (signature, issuer, audience, expiry) before the request is counted; keyHeader is then set to that claim on the forwarded request.',
      ),
    claim: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('jwt: the claim whose (string) value is the bucket key; sub when omitted.'),
    audience: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe(
        'jwt: the expected aud claim; the audience of the Portcullis auth server (urn:portcullis:user-service) when omitted.',
      ),
    issuer: z
      .strictObject({
        url: z
          .string()
          .min(1)
          .max(2048)
          .regex(/^https?:\/\/\S+$/, 'must be an http:// or https:// URL')
          .describe('Expected iss claim, e.g. https://id.example.com.'),
        jwksUrl: z
          .string()
          .min(1)
          .max(2048)
          .regex(/^https?:\/\/\S+$/, 'must be an http:// or https:// URL')
          .optional()
          .describe(
            'Where the issuer publishes its public keys (JWKS); url + /jwks.json when omitted.',
          ),
      })
      .optional()
      .describe(
        'jwt: who issues the access tokens. When omitted, the auth server the operator runs in the route namespace: its issuer URL as the operator is configured, its keys fetched from its Service inside the cluster.',
      ),
  })
  .refine(keyJwtFieldsRule.holds, refineParams(keyJwtFieldsRule))
  .meta({ 'x-kubernetes-validations': [celValidation(keyJwtFieldsRule)] })
  .describe('Where the bucket key of a request comes from.');
export type LimiterKey = z.infer<typeof limiterKeySchema>;

export const limiterSchema = z
  .strictObject({
    replenishRate: replenishRate
      .optional()
      .describe(
        'Single-limit form: tokens restored to each bucket per second (an integer >= 1), e.g. 20.',
      ),
    burstCapacity: burstCapacity
      .optional()
      .describe(
        'Single-limit form: maximum number of tokens a bucket holds (its size, >= 1), e.g. 100: the largest burst a client can send at once.',
      ),
    requestedTokens: requestedTokens
      .optional()
      .describe(
        'Single-limit form: tokens one request costs (>= 1, <= burstCapacity; 1 when omitted), e.g. 3.',
      ),
    rules: z
      .array(ruleSchema)
      .min(1)
      .max(MAX_RULES)
      .refine(ruleNamesRule.holds, refineParams(ruleNamesRule))
      .optional()
      .meta({
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['name'],
        'x-kubernetes-validations': [celValidation(ruleNamesRule)],
      })
      .describe(
        `Rules form (instead of the single-limit fields): up to ${MAX_RULES} rules in order; the first whose path and methods match a request decides its limits.`,
      ),
    unmatched: z
      .enum(UNMATCHED)
      .default('forward')
      .describe(
        'Rules form: a request no rule matches is forwarded without a limit (forward) or refused with 404 problem+json (refuse).',
      ),
    enforce: z
      .boolean()
      .default(true)
      .describe(
        'false: shadow mode for every rule that does not say otherwise: decide, count and send the rate-limit headers, but never refuse.',
      ),
    key: limiterKeySchema.default({ source: 'header' }),
    keyHeader: z
      .string()
      .min(1)
      .max(256)
      .regex(HEADER_NAME_PATTERN, HEADER_NAME_PROBLEM)
      .default(DEFAULT_KEY_HEADER)
      .describe(
        'key source header: the request header whose first value is the bucket key (one bucket per distinct value). key source jwt: the header the sidecar sets to the verified claim on the forwarded request (whatever the client sent in it is dropped).',
      ),
    onMissingKey: z
      .strictObject({
        status: z
          .int()
          .min(MISSING_KEY_STATUS.min)
          .max(MISSING_KEY_STATUS.max)
          .default(MISSING_KEY_STATUS.default)
          .describe(
            'HTTP status (4xx) of the application/problem+json error sent when the key header is missing.',
          ),
      })
      .default({ status: MISSING_KEY_STATUS.default })
      .describe(
        'What a request without the key header gets: a clear 4xx problem+json error, never a 500.',
      ),
    onStoreError: z
      .enum(ON_STORE_ERROR)
      .default('allow')
      .describe(
        'When Redis is unreachable or slow: allow (fail open: requests pass uncounted) or deny (503).',
      ),
  })
  .refine(limiterFormRule.holds, refineParams(limiterFormRule))
  .refine(singleLimitRule.holds, refineParams(singleLimitRule))
  .refine(requestedTokensRule.holds, refineParams(requestedTokensRule))
  .meta({
    'x-kubernetes-validations': [limiterFormRule, singleLimitRule, requestedTokensRule].map(
      celValidation,
    ),
  })
  .describe(
    'Token-bucket limiter of the route (as in the RequestRateLimiter filter of Spring Cloud Gateway), one bucket per key: either the single-limit form (replenishRate, burstCapacity, requestedTokens) or rules.',
  );
export type Limiter = z.infer<typeof limiterSchema>;
